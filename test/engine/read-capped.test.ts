/** The capped body reader shared by invoke bodies and webhook responses. */
import { describe, expect, it } from "vitest";
import { DRAIN_MAX_BYTES, readCapped } from "../../src/engine/read-capped.ts";

class TooLarge extends Error {}
const tooLarge = () => new TooLarge("too large");

/** A body streamed in chunks, with no Content-Length (as a chunked response arrives). */
function chunked(chunks: number[]): { res: Response; pulled: () => number } {
  let i = 0;
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      const n = chunks[i++];
      if (n === undefined) controller.close();
      else controller.enqueue(new Uint8Array(n).fill(120));
    },
  });
  return { res: new Response(stream), pulled: () => i };
}

describe("readCapped", () => {
  it("returns every byte of a body within the cap", async () => {
    const bytes = await readCapped(new Response("hello world"), 11, tooLarge);
    expect(new TextDecoder().decode(bytes)).toBe("hello world");
  });

  it("returns an empty array for a message without a body", async () => {
    expect(await readCapped(new Response(null), 10, tooLarge)).toEqual(new Uint8Array(0));
  });

  it("refuses a declared Content-Length over the cap before reading anything", async () => {
    const { res, pulled } = chunked([4]);
    const declared = new Response(res.body, { headers: { "content-length": "1000" } });
    await expect(readCapped(declared, 10, tooLarge)).rejects.toBeInstanceOf(TooLarge);
    expect(pulled()).toBe(0);
  });

  it("stops a chunked body as soon as the running count passes the cap", async () => {
    const { res, pulled } = chunked([6, 6, 6, 6, 6]);
    await expect(readCapped(res, 10, tooLarge)).rejects.toBeInstanceOf(TooLarge);
    expect(pulled()).toBeLessThan(5);
  });

  it("does not trust a Content-Length that understates the body", async () => {
    const req = new Request("http://x.test/", {
      method: "POST",
      body: "x".repeat(50),
      headers: { "content-length": "5" },
    });
    await expect(readCapped(req, 10, tooLarge)).rejects.toBeInstanceOf(TooLarge);
  });

  it("reads a refused request's body to its end, so that its sender gets to read the 413", async () => {
    for (const headers of [{ "content-length": "1000" }, {}] as Record<string, string>[]) {
      const { res, pulled } = chunked([6, 6, 6, 6, 6]);
      const req = new Request("http://x.test/", {
        method: "POST",
        body: res.body,
        headers,
        duplex: "half",
      } as RequestInit);
      await expect(readCapped(req, 10, tooLarge)).rejects.toBeInstanceOf(TooLarge);
      expect(pulled()).toBe(6); // the five chunks and the end
    }
  });

  it("gives up reading a refused request's body past DRAIN_MAX_BYTES", async () => {
    const mib = 1024 * 1024;
    const chunks = Array.from({ length: DRAIN_MAX_BYTES / mib + 50 }, () => mib);
    const { res, pulled } = chunked(chunks);
    const req = new Request("http://x.test/", {
      method: "POST",
      body: res.body,
      duplex: "half",
    } as RequestInit);
    await expect(readCapped(req, 10, tooLarge)).rejects.toBeInstanceOf(TooLarge);
    expect(pulled()).toBeLessThan(chunks.length);
  });
});
