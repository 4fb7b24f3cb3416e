/**
 * The event-stream reader of the MCP transports: servers end lines with LF, CRLF or CR, and the
 * network may cut a chunk anywhere — also between the CR and the LF of one line end. An HTTP+SSE
 * server whose `endpoint` event arrived cut that way was never announced, and the agent step
 * waited for it until the server's timeout.
 */
import { describe, expect, it } from "vitest";
import { readSse, type SseEvent } from "../../src/common/sse.ts";

function streamOf(chunks: string[]): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  return new ReadableStream({
    start(controller) {
      for (const c of chunks) controller.enqueue(encoder.encode(c));
      controller.close();
    },
  });
}

async function eventsOf(chunks: string[]): Promise<SseEvent[]> {
  const out: SseEvent[] = [];
  for await (const ev of readSse(streamOf(chunks), 1 << 20, () => new Error("too large"))) out.push(ev);
  return out;
}

describe("readSse", () => {
  it("reads an event whose CRLF is cut between its CR and LF", async () => {
    const events = await eventsOf([
      ": hello\r\n\r\nevent: endpoint\r",
      "\ndata: /messages?sessionId=1\r\n\r",
      "\nevent: message\r\ndata: {}\r\n\r\n",
    ]);
    expect(events).toEqual([
      { event: "endpoint", data: "/messages?sessionId=1", id: null },
      { event: "message", data: "{}", id: null },
    ]);
  });

  it("reads LF, CRLF and lone CR line ends alike", async () => {
    const events = await eventsOf([
      "event: a\ndata: 1\n\n",
      "event: b\r\ndata: 2\r\n\r\n",
      "event: c\rdata: 3\r\r",
    ]);
    expect(events.map((e) => [e.event, e.data])).toEqual([
      ["a", "1"],
      ["b", "2"],
      ["c", "3"],
    ]);
  });

  it("takes a last event that ends with a lone CR when the stream closes", async () => {
    const events = await eventsOf(["data: tail\r"]);
    expect(events).toEqual([{ event: "message", data: "tail", id: null }]);
  });
});
