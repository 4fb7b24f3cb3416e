/**
 * Reads a response stream until what it has read satisfies `done`, failing on its timeout (or
 * when the stream ends first) with what it read: the one way a test waits on a stream.
 */
export async function readUntil(
  reader: ReadableStreamDefaultReader<Uint8Array> | ReadableStreamDefaultReader<string>,
  done: (text: string) => boolean,
  { timeoutMs = 15_000, what = "the stream" }: { timeoutMs?: number; what?: string } = {},
): Promise<string> {
  const decoder = new TextDecoder();
  let text = "";
  const giveUpAt = Date.now() + timeoutMs;
  while (!done(text)) {
    const left = giveUpAt - Date.now();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timedOut = new Promise<"timeout">((r) => {
      timer = setTimeout(() => r("timeout"), Math.max(0, left));
    });
    const next = await Promise.race([reader.read(), timedOut]);
    clearTimeout(timer);
    if (next === "timeout")
      throw new Error(`timed out after ${timeoutMs} ms reading ${what}; read: ${text.slice(-2000)}`);
    if (next.done) throw new Error(`${what} ended before what was awaited; read: ${text.slice(-2000)}`);
    text += typeof next.value === "string" ? next.value : decoder.decode(next.value, { stream: true });
  }
  return text;
}
