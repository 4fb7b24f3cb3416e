/**
 * The wait step (docs/file-format.md): a run waits for a signal (its body the step's output, checked against
 * the wait's schema), keeps a signal that comes early, fails `wait_timeout` when none comes, and
 * sleeps; all of it durable: a signal reaches a run whose object was evicted while it waited, and
 * a sleep ends on the object's alarm after an eviction.
 */

import { evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { poll } from "../../support/poll.ts";
import { call, type Envelope, invoke, targetLog, uniqueKey, waitForRun } from "../../worker/harness.ts";

async function start(name: string, params: Record<string, unknown>): Promise<string> {
  const res = await invoke(name, params);
  expect(res.status).toBe(202);
  return ((await res.json()) as { run_id: string }).run_id;
}

/** Polls the envelope until step `id` has `status`. */
function stepStatus(runId: string, id: string, status: string): Promise<Envelope> {
  return poll(
    `step ${id} of ${runId} to be ${status}`,
    async () => (await (await call(`/runs/${runId}`)).json()) as Envelope,
    (e) => e.steps.find((s: { id: string }) => s.id === id)?.status === status,
    { timeoutMs: 10_000, intervalMs: 30 },
  );
}

/** When the run's object is next woken by its alarm (null: no alarm). */
function alarmAt(stub: DurableObjectStub): Promise<number | null> {
  return runInDurableObject(stub, (_o, state) => state.storage.getAlarm());
}

function signal(runId: string, name: string, body?: unknown): Promise<Response> {
  return call(`/runs/${runId}/signals/${name}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

const codeOf = async (res: Response) => ((await res.json()) as { code: string }).code;

describe("wait for a signal", () => {
  it("shows the step waiting while the run runs, then completes it with the signal's body", async () => {
    const key = uniqueKey("wait");
    const runId = await start("wait-signal", { key });
    const waiting = await stepStatus(runId, "payment", "waiting");
    expect(waiting.status).toBe("running");
    const res = await signal(runId, "payment_received", { amount: 42 });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ delivered: true, step: "payment" });
    const e = await waitForRun(runId);
    expect(e.status).toBe("complete");
    expect(e.steps[1].output).toEqual({ amount: 42 });
    const recorded = (await targetLog(key)).filter((r) => r.path === "/echo");
    expect(JSON.parse(recorded[0]?.body ?? "{}")).toEqual({ amount: 42 });
  });

  it("answers 422 invalid_signal for a body that fails the wait's schema, and keeps waiting", async () => {
    const runId = await start("wait-signal", { key: uniqueKey("wait-bad") });
    await stepStatus(runId, "payment", "waiting");
    const bad = await signal(runId, "payment_received", { amount: "lots" });
    expect(bad.status).toBe(422);
    expect(bad.headers.get("content-type")).toBe("application/problem+json");
    expect(await codeOf(bad)).toBe("invalid_signal");
    await stepStatus(runId, "payment", "waiting");
    expect((await signal(runId, "payment_received", { amount: 1 })).status).toBe(200);
    expect((await waitForRun(runId)).status).toBe("complete");
  });

  it("keeps a signal that comes before the run reaches its wait (one per name) and consumes it there", async () => {
    const runId = await start("wait-signal", { key: uniqueKey("wait-early"), before_ms: 700 });
    const early = await signal(runId, "payment_received", { amount: 7 });
    expect(early.status).toBe(202);
    expect(await early.json()).toEqual({ delivered: false, kept: true });
    const second = await signal(runId, "payment_received", { amount: 8 });
    expect(second.status).toBe(409);
    expect(await codeOf(second)).toBe("signal_pending");
    const e = await waitForRun(runId);
    expect(e.status).toBe("complete");
    expect(e.steps[1].output).toEqual({ amount: 7 });
  });

  it("fails the step wait_timeout when no signal comes within timeout_s", async () => {
    const runId = await start("wait-signal", { key: uniqueKey("wait-timeout") });
    const waiting = await stepStatus(runId, "payment", "waiting");
    const stub = env.RUNS.get(env.RUNS.idFromString(runId));
    // The wait times out 3 s after it began (its own record); the run's alarm wakes it then.
    const due = Date.parse(waiting.steps[1].started_at) + 3000;
    expect(await alarmAt(stub)).not.toBeNull();
    await poll(
      "the wait's timeout",
      () => Date.now(),
      (now) => now >= due,
    );
    await runDurableObjectAlarm(stub);
    const e = await waitForRun(runId);
    expect(Date.parse(e.steps[1].finished_at)).toBeGreaterThanOrEqual(due);
    expect(e.status).toBe("failed");
    expect(e.error).toMatchObject({ code: "wait_timeout", step: "payment" });
    expect(e.steps[1].status).toBe("failed");
  });

  it("answers 409 run_not_active for a finished run and 404 run_not_found for an unknown one", async () => {
    const runId = await start("wait-signal", { key: uniqueKey("wait-done") });
    await stepStatus(runId, "payment", "waiting");
    await call(`/runs/${runId}/cancel`, { method: "POST" });
    const late = await signal(runId, "payment_received", { amount: 1 });
    expect(late.status).toBe(409);
    expect(await codeOf(late)).toBe("run_not_active");
    const unknown = await signal("a".repeat(64), "payment_received", {});
    expect(unknown.status).toBe(404);
    expect(await codeOf(unknown)).toBe("run_not_found");
  });

  it("answers 404 unknown_signal for a name no wait of the run declares (a typo is not kept), also once it has finished", async () => {
    const runId = await start("wait-signal", { key: uniqueKey("wait-typo"), before_ms: 700 });
    const typo = await signal(runId, "payment_receive", { amount: 1 });
    expect(typo.status).toBe(404);
    const refused = (await typo.json()) as { code: string; detail: string };
    expect(refused.code).toBe("unknown_signal");
    expect(refused.detail).toContain("did you mean `payment_received`?");
    // Nothing was kept: the real signal is still the first of its name.
    const early = await signal(runId, "payment_received", { amount: 7 });
    expect(early.status).toBe(202);
    await call(`/runs/${runId}/cancel`, { method: "POST" });
    expect(await codeOf(await signal(runId, "payment_receive", {}))).toBe("unknown_signal");
  });

  it("delivers a signal to a run whose object was evicted while it waited", async () => {
    const key = uniqueKey("wait-evict");
    const runId = await start("wait-signal", { key });
    await stepStatus(runId, "payment", "waiting");
    await evictDurableObject(env.RUNS.get(env.RUNS.idFromString(runId)));
    const res = await signal(runId, "payment_received", { amount: 3 });
    expect(await res.json()).toEqual({ delivered: true, step: "payment" });
    const e = await waitForRun(runId);
    expect(e.status).toBe("complete");
    expect(e.steps[1].output).toEqual({ amount: 3 });
    // The call before the wait was not made again.
    expect((await targetLog(key)).filter((r) => r.path.startsWith("/slow"))).toHaveLength(1);
  });
});

describe("sleep", () => {
  it("sleeps for_s, through an eviction, and completes with slept_s on its alarm", async () => {
    const key = uniqueKey("sleep");
    const runId = await start("wait-sleep", { key });
    const waiting = await stepStatus(runId, "cool-down", "waiting");
    const stub = env.RUNS.get(env.RUNS.idFromString(runId));
    // What wakes it: its alarm, at the end of the 1.5 s sleep.
    const due = await alarmAt(stub);
    const started = Date.parse(waiting.steps[0].started_at);
    expect(due).toBeGreaterThanOrEqual(started + 1500);
    expect(due).toBeLessThan(started + 1500 + 1000);
    await evictDurableObject(stub);
    await poll(
      "the sleep's end",
      () => Date.now(),
      (now) => now >= (due as number),
    );
    await runDurableObjectAlarm(stub);
    const e = await waitForRun(runId);
    // It woke no sooner than its alarm was due.
    expect(Date.parse(e.steps[0].finished_at)).toBeGreaterThanOrEqual(due as number);
    expect(e.status).toBe("complete");
    expect(e.steps[0].output).toEqual({ slept_s: 1.5 });
    expect(Date.parse(e.steps[1].started_at) - Date.parse(e.created_at)).toBeGreaterThanOrEqual(1500);
    // The sleeping step's own times span the sleep, though its object was evicted in between.
    expect(Date.parse(e.steps[0].finished_at) - Date.parse(e.steps[0].started_at)).toBeGreaterThanOrEqual(
      1500,
    );
  });
});
