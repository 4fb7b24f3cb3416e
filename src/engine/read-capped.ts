/**
 * Reads an HTTP body (a request's or a response's) into bytes, refusing more than `max`: the
 * declared Content-Length is checked first, then the running count while reading, so neither a
 * lying header nor a chunked stream gets past the cap. `tooLarge` makes the caller's own error.
 *
 * It lives beside the other outbound-network code (net.ts) because both the HTTP face (invoke
 * bodies, src/triggers/request-body.ts) and the step executors (webhook responses, src/steps/webhook.ts)
 * need it, and a step executor must not depend on the HTTP layer. Only web-standard
 * Request/Response are used, so it runs in Node as well as in workerd.
 */
export async function readCapped(
  message: Request | Response,
  max: number,
  tooLarge: () => Error,
): Promise<Uint8Array> {
  const declared = Number(message.headers.get("content-length"));
  if (Number.isFinite(declared) && declared > max) {
    if (message.body) await discard(message, message.body.getReader());
    throw tooLarge();
  }
  if (!message.body) return new Uint8Array(0);
  if (Number.isFinite(declared) && message.headers.has("content-length")) {
    // A declared length within the cap: one read instead of a chunk loop. The count is checked
    // again (a message built in code may carry any header).
    const bytes = new Uint8Array(await message.arrayBuffer());
    if (bytes.byteLength > max) throw tooLarge();
    return bytes;
  }
  const reader = message.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > max) {
      await discard(message, reader);
      throw tooLarge();
    }
    chunks.push(value);
  }
  const out = new Uint8Array(total);
  let offset = 0;
  for (const c of chunks) {
    out.set(c, offset);
    offset += c.byteLength;
  }
  return out;
}

/**
 * A request's body is read on to its end (at most DRAIN_MAX_BYTES more) before the refusal is
 * answered: a server that answers while the client is still sending and then closes resets the
 * connection, and the client never reads the 413 (curl's `Expect: 100-continue` sends a 30 MB
 * body after `100 Continue`; docs/errors-and-limits.md). Beyond DRAIN_MAX_BYTES, and for a
 * response (an outbound call's answer), the rest is canceled.
 */
async function discard(
  message: Request | Response,
  reader: ReadableStreamDefaultReader<Uint8Array>,
): Promise<void> {
  if (message instanceof Request) {
    let drained = 0;
    try {
      while (drained <= DRAIN_MAX_BYTES) {
        const { done, value } = await reader.read();
        if (done) return;
        drained += value.byteLength;
      }
    } catch {
      return; // The client went away: nothing is left to answer.
    }
  }
  reader.cancel().catch(() => {});
}

/** Cloudflare refuses request bodies over 100 MB (500 MB on Enterprise) before a Worker runs. */
export const DRAIN_MAX_BYTES = 100 * 1024 * 1024;
