/**
 * The one way a test waits (STYLE: wait by polling something observable, never by sleeping): reads
 * `read` until `done` holds on what it read, and fails on its timeout with what it was waiting for
 * and what it last saw. Runs in Node and in workerd alike (no Node API).
 */
export interface PollOptions {
  /** Default 15 s: generous on a loaded 2-core machine; a passing test returns long before. */
  timeoutMs?: number;
  /** Default 25 ms. */
  intervalMs?: number;
}

export async function poll<T>(
  what: string,
  read: () => Promise<T> | T,
  done: (value: T) => boolean,
  { timeoutMs = 15_000, intervalMs = 25 }: PollOptions = {},
): Promise<T> {
  const start = Date.now();
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() - start > timeoutMs) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}; last saw: ${shown(value)}`);
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

function shown(value: unknown): string {
  let text: string;
  try {
    text = typeof value === "string" ? value : (JSON.stringify(value) ?? String(value));
  } catch {
    text = String(value);
  }
  return text.length > 2000 ? `${text.slice(0, 2000)}…` : text;
}
