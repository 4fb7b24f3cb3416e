/**
 * The runtime limits of docs/http-api.md, each enforced with a clear error: invoke body 1 MiB
 * (413 payload_too_large) and 128 levels of nesting (400 invalid_json), 6 outbound requests in flight per run (more wait their turn), step
 * output 1 MiB (output_too_large). The compile-time limits (200 steps, sub-workflow depth 8)
 * are in test/reliability/compiler/limits.test.ts.
 */
import { describe, expect, it } from "vitest";
import { call, invoke, run, targetLog, uniqueKey } from "../worker/harness.ts";

const MIB = 1024 * 1024;

/** A JSON object body of exactly `bytes` bytes. */
function bodyOf(bytes: number): string {
  const frame = '{"pad":""}';
  return `{"pad":"${"x".repeat(bytes - frame.length)}"}`;
}

describe("invoke body: 1 MiB", () => {
  it("accepts a body of exactly 1 MiB", async () => {
    const body = bodyOf(MIB);
    expect(new TextEncoder().encode(body).length).toBe(MIB);
    const res = await invoke("rel-open", body);
    expect(res.status).toBe(202);
  });

  it("refuses one byte more with 413 payload_too_large", async () => {
    const res = await invoke("rel-open", bodyOf(MIB + 1));
    expect(res.status).toBe(413);
    expect(res.headers.get("content-type")).toMatch(/^application\/problem\+json/);
    expect(((await res.json()) as { code: string }).code).toBe("payload_too_large");
  });

  it("refuses a streamed body without Content-Length once it passes 1 MiB", async () => {
    const chunk = new TextEncoder().encode("x".repeat(64 * 1024));
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent === 0) controller.enqueue(new TextEncoder().encode('{"pad":"'));
        if (sent > 2 * MIB) controller.close();
        else controller.enqueue(chunk);
        sent += chunk.length;
      },
    });
    const res = await call("/invoke/rel-open", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: stream,
    });
    expect(res.status).toBe(413);
    expect(((await res.json()) as { code: string }).code).toBe("payload_too_large");
  });
});

describe("invoke body: 128 levels of nesting", () => {
  const nested = (depth: number) => `{"a":${"[".repeat(depth - 1)}${"]".repeat(depth - 1)}}`;

  it("accepts params nested 128 levels deep and records them", async () => {
    const e = await run("rel-copy-params", nested(128));
    expect(e.status).toBe("complete");
    expect(JSON.stringify(e.params)).toBe(nested(128));
  });

  it("refuses 129 levels with 400 invalid_json (a deep body cannot exhaust the stack)", async () => {
    const res = await invoke("rel-open", nested(129));
    expect(res.status).toBe(400);
    expect(((await res.json()) as { code: string }).code).toBe("invalid_json");
  });

  it("counts only brackets outside strings", async () => {
    const res = await invoke("rel-open", { text: "[".repeat(10_000) });
    expect(res.status).toBe(202);
  });
});

describe("outbound requests per run: 6 at a time", () => {
  it("runs 8 parallel webhooks with never more than 6 in flight, and completes all 8", async () => {
    const key = uniqueKey("fanout");
    const e = await run("rel-fanout", { key });
    expect(e.status).toBe("complete");
    expect(e.output).toEqual({ result: [200, 200, 200, 200, 200, 200, 200, 200] });
    const arrivals = (await targetLog(key)).map((r) => r.time).sort((a, b) => a - b);
    expect(arrivals).toHaveLength(8);
    // Each request is held 500 ms by the target, so requests that arrive less than 450 ms apart
    // were in flight together.
    const mostAtOnce = Math.max(...arrivals.map((t) => arrivals.filter((u) => u >= t && u < t + 450).length));
    expect(mostAtOnce).toBe(6);
  });
});

describe("step output: 1 MiB", () => {
  it("fails a step whose output is over 1 MiB with output_too_large and keeps the run readable", async () => {
    const e = await run("rel-big-output", { text: "x".repeat(600_000) });
    expect(e.status).toBe("failed");
    expect(e.error).toMatchObject({ code: "output_too_large", step: "double" });
    expect(e.error.message).toMatch(/1048576 bytes/);
    expect(e.steps[1].output).toEqual({ skipped: true, reason: "run_failed" });
    const stored = await call(`/runs/${e.run_id}`);
    expect(stored.status).toBe(200);
    expect(((await stored.json()) as { error: { code: string } }).error.code).toBe("output_too_large");
  });

  it("records an output just under 1 MiB", async () => {
    const e = await run("rel-big-output", { text: "x".repeat(500_000) });
    expect(e.status).toBe("complete");
    expect(e.steps[0].output.result[0]).toHaveLength(500_000);
    expect(e.output).toEqual({ result: 2 });
  });
});
