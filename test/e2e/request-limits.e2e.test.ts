/**
 * A client that sends too much reads the 413, over real HTTP to `wrangler dev` (the Worker
 * answering before the body has arrived, then the connection closing with the body unread, resets
 * it, and the client sees "connection reset" instead of the answer): a 30 MB body sent the way
 * curl sends it (`Expect: 100-continue`, the body after `100 Continue`), a 2 MiB body sent at
 * once, again and again, and a 30 MB chunked body with no length.
 */
import { request } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startWorker, type WorkerProcess } from "./worker-process.ts";

let worker: WorkerProcess;

beforeAll(async () => {
  worker = await startWorker({ ALLOW_PRIVATE_WEBHOOKS: "true" });
});

afterAll(async () => {
  await worker?.stop();
});

interface Sent {
  status: number;
  body: string;
}

/** POSTs `bytes` of JSON-ish filler to `path`, as `mode` says; resolves with what came back. */
function send(path: string, bytes: number, mode: "expect-continue" | "at-once" | "chunked"): Promise<Sent> {
  const chunk = Buffer.alloc(64 * 1024, "a");
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (mode !== "chunked") headers["content-length"] = String(bytes);
  if (mode === "expect-continue") headers.expect = "100-continue";
  return new Promise((resolve, reject) => {
    const req = request(`${worker.url}${path}`, { method: "POST", headers });
    const write = () => {
      let left = bytes;
      const more = () => {
        while (left > 0) {
          const piece = left >= chunk.length ? chunk : chunk.subarray(0, left);
          left -= piece.length;
          if (!req.write(piece)) return void req.once("drain", more);
        }
        req.end();
      };
      more();
    };
    if (mode === "expect-continue") req.once("continue", write);
    else write();
    req.once("response", (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (c: string) => {
        body += c;
      });
      res.once("end", () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.once("error", reject);
  });
}

describe("a body over the limit", () => {
  it("of 30 MB sent after 100 Continue is answered 413 payload_too_large, read by the client", async () => {
    for (let i = 0; i < 3; i++) {
      const sent = await send("/invoke/e2e-pipeline", 30 * 1024 * 1024, "expect-continue");
      expect(sent.status).toBe(413);
      expect(JSON.parse(sent.body)).toMatchObject({ code: "payload_too_large", status: 413 });
    }
  });

  it("of 2 MiB sent at once is answered 413 every time, never a closed connection", async () => {
    for (let i = 0; i < 20; i++) {
      const sent = await send("/invoke/e2e-pipeline", 2 * 1024 * 1024, "at-once");
      expect(sent.status).toBe(413);
    }
  });

  it("of 30 MB chunked, with no length declared, is answered 413", async () => {
    const sent = await send("/invoke/e2e-pipeline", 30 * 1024 * 1024, "chunked");
    expect(sent.status).toBe(413);
    expect(JSON.parse(sent.body)).toMatchObject({ code: "payload_too_large" });
  });
});
