/**
 * The origin that absolute URLs (an approval's `decide_url`) of a run no HTTP request started
 * begin with: a schedule, a queue message or an email has no origin of its own, so it is the
 * Worker's public URL from the optional `PUBLIC_URL` var; without it (or when it is not an
 * http(s) URL) those URLs stay relative.
 */
export function publicOrigin(env: Env): string | null {
  const raw = (env as unknown as Record<string, unknown>).PUBLIC_URL;
  if (typeof raw !== "string" || raw.trim() === "") return null;
  try {
    const url = new URL(raw.trim());
    return url.protocol === "https:" || url.protocol === "http:" ? url.origin : null;
  } catch {
    return null;
  }
}
