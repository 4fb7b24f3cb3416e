/**
 * A Server-Sent Events reader, for the MCP transports and the model providers' streams: the Streamable HTTP answers
 * (`text/event-stream` bodies of a POST) and the old HTTP+SSE transport's long-lived GET stream
 * arrive as `event:` / `data:` / `id:` blocks separated by a blank line. The reader counts the
 * bytes it takes so a server cannot make a run hold an unbounded event in memory.
 */

export interface SseEvent {
  /** `message` when the block names none. */
  event: string;
  data: string;
  id: string | null;
}

/** Yields the events of `body` in order; throws `tooLarge()` when one event exceeds `maxEventBytes`. */
export async function* readSse(
  body: ReadableStream<Uint8Array>,
  maxEventBytes: number,
  tooLarge: () => Error,
): AsyncGenerator<SseEvent> {
  // Typed as a plain transform: Node's DOM typings (the workflow-test runner) and workerd's disagree on its writable side.
  const decoder = new TextDecoderStream() as unknown as TransformStream<Uint8Array, string>;
  const reader = body.pipeThrough(decoder).getReader();
  let buffer = "";
  // A chunk may end between the `\r` and the `\n` of a CRLF: that `\r` waits for the next chunk,
  // or it would read as a line end of its own and split the event (`event: endpoint` from its data).
  let heldCr = false;
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      let chunk: string = heldCr ? `\r${value}` : value;
      heldCr = chunk.endsWith("\r");
      if (heldCr) chunk = chunk.slice(0, -1);
      buffer += chunk.replace(/\r\n?/g, "\n");
      let cut = buffer.indexOf("\n\n");
      while (cut >= 0) {
        const ev = parseBlock(buffer.slice(0, cut));
        buffer = buffer.slice(cut + 2);
        if (ev) yield ev;
        cut = buffer.indexOf("\n\n");
      }
      if (buffer.length > maxEventBytes) throw tooLarge();
    }
    if (heldCr) buffer += "\n";
    const last = parseBlock(buffer);
    if (last) yield last;
  } finally {
    reader.cancel().catch(() => {});
  }
}

function parseBlock(block: string): SseEvent | null {
  let event = "message";
  let id: string | null = null;
  const data: string[] = [];
  for (const line of block.split("\n")) {
    if (line === "" || line.startsWith(":")) continue;
    const colon = line.indexOf(":");
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "event") event = value;
    else if (field === "data") data.push(value);
    else if (field === "id") id = value;
  }
  if (data.length === 0) return null;
  return { event, data: data.join("\n"), id };
}
