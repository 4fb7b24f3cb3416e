/**
 * Fault injection end to end: webhook targets that hang, reset the connection, answer garbage or
 * too much, a retry back-off that would outlive the run, and a cancel while a step is in flight.
 * Whatever the target does, the run ends (never hangs), ends the way the docs say, and its record
 * stays readable.
 */
import { describe, expect, it } from "vitest";
import { call, type Envelope, run, targetLog, uniqueKey } from "../worker/harness.ts";
import { logUntil, requestsOf, startRun } from "./run-helpers.ts";

const MIB = 1024 * 1024;

async function readEnvelope(runId: string): Promise<Envelope> {
  const res = await call(`/runs/${runId}`);
  expect(res.status).toBe(200);
  return res.json();
}

describe("a webhook target that never answers", () => {
  it("fails the step as webhook_failed after 3 attempts of timeout_s each, inside the deadline", async () => {
    const key = uniqueKey("hang");
    const e = await run("rel-faults", { route: "hang", key });
    expect(e.status).toBe("failed");
    expect(e.error).toMatchObject({ code: "webhook_failed", step: "call" });
    expect(e.steps[0].metrics.attempts).toBe(3);
    expect(e.steps[1].output).toEqual({ skipped: true, reason: "run_failed" });
    expect(Date.parse(e.finished_at)).toBeLessThan(Date.parse(e.deadline));
    const log = await targetLog(key);
    expect(log).toHaveLength(3);
    expect(new Set(log.map((r) => r.headers["idempotency-key"]))).toEqual(new Set([`${e.run_id}:call`]));
  });

  it("ends the run as failed/timeout at the run deadline when the attempt timeout is longer", async () => {
    const t0 = Date.now();
    const e = await run("rel-short-deadline", { route: "hang", key: uniqueKey("hang-deadline") });
    // The run's deadline is 2 s and the endpoint never answers: ending at all, in seconds, is the point.
    expect(Date.now() - t0).toBeLessThan(8_000);
    expect(e.status).toBe("failed");
    expect(e.error.code).toBe("timeout");
    expect(e.steps[0].status).toBe("canceled");
    expect(e.steps[1].output).toEqual({ skipped: true, reason: "run_failed" });
  });
});

describe("a webhook target that resets the connection", () => {
  it("retries, then fails the step as webhook_failed without a stack in the message", async () => {
    const key = uniqueKey("reset");
    const e = await run("rel-faults", { route: "reset", key });
    expect(e.status).toBe("failed");
    expect(e.error.code).toBe("webhook_failed");
    expect(e.error.message).toMatch(/after 3 attempts/);
    expect(e.error.message).not.toMatch(/\n\s+at /);
    expect(await targetLog(key)).toHaveLength(3);
  });
});

describe("a webhook target that answers garbage", () => {
  it("keeps a body that is not the JSON its content type claims as text", async () => {
    const e = await run("rel-faults", { route: "garbage", key: uniqueKey("garbage") });
    expect(e.status).toBe("complete");
    expect(e.steps[0].output.body).toBe('{"this is": not json');
    expect(e.output).toEqual({ result: 200 });
  });
});

describe("a webhook target that answers too much", () => {
  it("fails the step with output_too_large for a body over 1 MiB, sent once, run still readable", async () => {
    const key = uniqueKey("huge");
    const e = await run("rel-faults", { route: `huge/${MIB + 1}`, key });
    expect(e.status).toBe("failed");
    expect(e.error).toMatchObject({ code: "output_too_large", step: "call" });
    expect(e.steps[0].output).toBeNull();
    expect(await targetLog(key)).toHaveLength(1);
    const stored = await readEnvelope(e.run_id);
    expect(stored.status).toBe("failed");
    expect(stored.steps[0].error.code).toBe("output_too_large");
  });

  it("records a body just under 1 MiB in full", async () => {
    const e = await run("rel-faults", { route: "huge/1000000", key: uniqueKey("big") });
    expect(e.status).toBe("complete");
    expect(e.steps[0].output.body).toHaveLength(1_000_000);
    const stored = await readEnvelope(e.run_id);
    expect(stored.steps[0].output.body).toHaveLength(1_000_000);
  });
});

describe("the run deadline against a Retry-After longer than the time left", () => {
  // docs: "Retry-After honoured, all inside the run deadline". The deadline fires while the step
  // waits out the back-off: the run ends failed/timeout at its deadline, with no second request.
  it("ends the run as a timeout at its deadline, without a second request", async () => {
    const key = uniqueKey("retry-after");
    const t0 = Date.now();
    const e = await run("rel-short-deadline", { route: "retry-after/10", key });
    // Before the 10 s the Retry-After asks for: the run ended at its own 2 s deadline.
    expect(Date.now() - t0).toBeLessThan(8_000);
    expect(e.status).toBe("failed");
    expect(e.error.code).toBe("timeout");
    expect(e.steps[0].status).toBe("canceled");
    expect(Date.parse(e.finished_at)).toBeGreaterThanOrEqual(Date.parse(e.deadline));
    expect(await targetLog(key)).toHaveLength(1);
  });
});

describe("cancel while a step is in flight", () => {
  it("cancels the running step, skips the rest, and sends nothing after the cancel", async () => {
    const key = uniqueKey("cancel");
    const runId = await startRun("rel-sequence", { key, slow_ms: 1000 });
    await logUntil(key, (log) => requestsOf(log, runId, "middle").length === 1);
    const res = await call(`/runs/${runId}/cancel`, { method: "POST" });
    expect(res.status).toBe(202);
    const e = (await res.json()) as Envelope;
    expect(e.status).toBe("canceled");
    expect(e.steps.map((s: { status: string }) => s.status)).toEqual(["complete", "canceled", "skipped"]);
    expect(e.steps[2].output).toEqual({ skipped: true, reason: "run_canceled" });
    // The run's own record: the last step never started and the run is over, so nothing more goes out.
    const log = await targetLog(key);
    expect(requestsOf(log, runId, "last")).toHaveLength(0);
    expect(log).toHaveLength(2);
    const stored = await readEnvelope(runId);
    expect(stored.status).toBe("canceled");
    expect(stored.steps[1].status).toBe("canceled");
  });
});

describe("run storage near its limits", () => {
  it("completes and stays readable when params and output are each near 1 MiB", async () => {
    const params = { blob: "p".repeat(MIB - 100) };
    const e = await run("rel-copy-params", params);
    expect(e.status).toBe("complete");
    expect(e.output.result.blob).toHaveLength(MIB - 100);
    const stored = await readEnvelope(e.run_id);
    expect(stored.status).toBe("complete");
    expect(stored.params.blob).toHaveLength(MIB - 100);
    expect(stored.output.result.blob).toHaveLength(MIB - 100);
  });
});
