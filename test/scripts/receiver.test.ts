/**
 * `npm run receiver` (scripts/receiver.ts), the local stand-in for a workflow's webhook targets
 * that docs/walkthrough.md points `npm start` at: it answers any request 200 with JSON and prints
 * what was sent (method, path, the headers that matter, the body), never a credential.
 */

import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { poll } from "../support/poll.ts";

const ROOT = join(import.meta.dirname, "../..");

let child: ChildProcessWithoutNullStreams;
let printed = "";
let url = "";

/** Resolves once the receiver has printed something matching `pattern` (3 s at most). */
async function printedMatch(pattern: RegExp): Promise<RegExpMatchArray> {
  const m = await poll(
    `the receiver to print ${pattern}`,
    () => printed.match(pattern),
    (x) => x !== null,
    {
      timeoutMs: 10_000,
      intervalMs: 50,
    },
  );
  return m as RegExpMatchArray;
}

beforeAll(async () => {
  child = spawn(process.execPath, [join(ROOT, "scripts/receiver.ts"), "--port", "0"]);
  child.stdout.on("data", (c) => {
    printed += c;
  });
  child.stderr.on("data", (c) => {
    printed += c;
  });
  const m = await printedMatch(/listening on (http:\/\/127\.0\.0\.1:\d+)/);
  url = m[1] as string;
});

afterAll(() => {
  if (child.exitCode === null) child.kill();
});

describe("the local receiver", () => {
  it("answers any request 200 with JSON and prints its method, path, headers of interest and body", async () => {
    const res = await fetch(`${url}/reservations?x=1`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        authorization: "Bearer receiver-test-secret-81f2",
        "webhook-id": "msg_123",
        "x-order": "A-1",
      },
      body: JSON.stringify({ order_id: "A-1", amount: 12 }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/json");
    expect(await res.json()).toEqual({ ok: true });
    const block = (await printedMatch(/\d\d:\d\d:\d\d\.\d{3} POST \/reservations\?x=1\n(?: {2}.*\n)+/))[0];
    expect(block.split("\n").slice(1, -1)).toEqual([
      "  content-type: application/json",
      "  authorization: Bearer …",
      "  webhook-id: msg_123",
      "  x-order: A-1",
      '  {"order_id":"A-1","amount":12}',
    ]);
    expect(printed).not.toContain("receiver-test-secret-81f2");
  });

  it("answers a request without a body too, and says it had none", async () => {
    const res = await fetch(`${url}/health`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ ok: true });
    await printedMatch(/ GET \/health\n {2}\(no body\)\n/);
  });
});
