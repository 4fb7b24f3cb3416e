/**
 * Compensation (docs/file-format.md, "Compensation"): a run that ends failed or canceled undoes
 * what its completed steps did, latest completion first, after its answer; each undo call carries
 * `Idempotency-Key: <run_id>:<path>:compensate` on every attempt; a failed compensation does not
 * stop the next and can be tried again with POST /runs/{id}/compensate; a run killed in the middle
 * of its compensations sends what was not done again, under the same key.
 */

import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { logUntil, runStub } from "../../reliability/run-helpers.ts";
import { poll } from "../../support/poll.ts";
import {
  call,
  type Envelope,
  invoke,
  type LoggedRequest,
  targetLog,
  uniqueKey,
} from "../../worker/harness.ts";

interface Undo {
  what: string;
  key: string;
  time: number;
}

/** The undo calls the target received for `key`, in arrival order. */
async function undos(key: string): Promise<Undo[]> {
  const log = await targetLog(key);
  return log.map((r: LoggedRequest & { query?: Record<string, string> }) => {
    const body = r.body ? (JSON.parse(r.body) as { undo?: string }) : {};
    return { what: r.query?.undo ?? body.undo ?? "?", key: r.headers["idempotency-key"] ?? "", time: r.time };
  });
}

async function envelope(runId: string): Promise<Envelope> {
  return (await call(`/runs/${runId}`)).json();
}

/** Polls the run until its compensation phase is over (or fails after `ms`). */
function compensated(runId: string, ms = 15_000): Promise<Envelope> {
  return poll(
    `the compensation of ${runId} to end`,
    () => envelope(runId),
    (e) => e.compensation && e.compensation.status !== "running",
    { timeoutMs: ms, intervalMs: 50 },
  );
}

/** Polls `read` until it gives a non-empty list (or fails the test after `ms`). */
function until<T>(read: () => Promise<T[]>, ms = 10_000): Promise<T[]> {
  return poll(read.toString(), read, (v) => v.length > 0, { timeoutMs: ms, intervalMs: 50 });
}

async function start(body: Record<string, unknown>): Promise<string> {
  const res = await invoke("comp-saga", body);
  expect(res.status).toBe(202);
  return ((await res.json()) as { run_id: string }).run_id;
}

const ORDER = ["label-b", "label-a", "charge", "reserve"];

/** Waits until the saga's last step runs (everything before it has completed). */
async function lastRunning(runId: string): Promise<void> {
  await poll(
    `the last step of ${runId} to run`,
    () => envelope(runId),
    (e) => e.steps.find((s: { id: string }) => s.id === "last")?.status === "running",
    { timeoutMs: 10_000, intervalMs: 25 },
  );
}

describe("compensation of a run that fails", () => {
  it("undoes every completed step, latest completion first, fan-out items each, after the run's answer", async () => {
    const key = uniqueKey("comp-order");
    const res = await invoke("comp-saga", { key }, { wait: 20 });
    expect(res.status).toBe(200);
    const answered = (await res.json()) as Envelope;
    expect(answered.status).toBe("failed");
    expect(answered.error.step).toBe("last");
    // The answer is not held for the undo calls: the phase is under way when it leaves.
    expect(answered.compensation.status).toBe("running");
    const e = await compensated(answered.run_id);
    expect(e.status).toBe("failed");
    expect(e.compensation.status).toBe("complete");
    expect(e.compensation.steps.map((s: { step: string }) => s.step)).toEqual([
      "label/1",
      "label/0",
      "charge",
      "reserve",
    ]);
    for (const s of e.compensation.steps) {
      expect(s.status).toBe("complete");
      expect(s.attempts).toBe(1);
      expect(s.error).toBeNull();
      expect(Date.parse(s.finished_at)).toBeGreaterThanOrEqual(Date.parse(e.finished_at));
    }
    const sent = await undos(key);
    expect(sent.map((u) => u.what)).toEqual(ORDER);
    expect(sent.map((u) => u.key)).toEqual(
      ["label/1", "label/0", "charge", "reserve"].map((p) => `${answered.run_id}:${p}:compensate`),
    );
  });

  it("renders output, item and error in the undo calls", async () => {
    const key = uniqueKey("comp-templates");
    const runId = await start({ key });
    await compensated(runId);
    const log = await targetLog(key);
    const reserve = log.find((r) => r.method === "DELETE") as LoggedRequest & {
      query: Record<string, string>;
    };
    // `output` is the step's own output: the echo of its body.
    expect(reserve.query.id).toBe("reserve");
    const charge = log.find((r) => r.body.includes('"charge"')) as LoggedRequest;
    expect(JSON.parse(charge.body)).toEqual({ undo: "charge", error: "webhook_failed", failed_step: "last" });
    const labels = log.filter((r) => r.body.includes("label-")).map((r) => JSON.parse(r.body));
    expect(labels).toEqual([
      { undo: "label-b", index: 1 },
      { undo: "label-a", index: 0 },
    ]);
  });

  it("compensates nothing for a run that completes", async () => {
    const key = uniqueKey("comp-none");
    const res = await invoke("comp-saga", { key, last: "echo" }, { wait: 20 });
    const e = (await res.json()) as Envelope;
    expect(e.status).toBe("complete");
    expect(e.compensation).toBeNull();
    // Once the run's after-answer effects have run (it is listed), it still owes no undo.
    await poll(
      `${e.run_id} listed as complete`,
      async () =>
        (
          (await (await call("/runs?workflow=comp-saga&status=complete&limit=100")).json()) as {
            runs: Array<{ run_id: string }>;
          }
        ).runs,
      (runs) => runs.some((r) => r.run_id === e.run_id),
      { timeoutMs: 12_000, intervalMs: 50 },
    );
    expect((await envelope(e.run_id)).compensation).toBeNull();
    expect(await targetLog(key)).toEqual([]);
  });
});

describe("compensation with sub-workflows", () => {
  it("undoes a sub-workflow's steps before the workflow step's own, and runs a sub-workflow as a compensation", async () => {
    const key = uniqueKey("comp-subs");
    const res = await invoke("comp-subs", { key }, { wait: 20 });
    const answered = (await res.json()) as Envelope;
    expect(answered.status).toBe("failed");
    const e = await compensated(answered.run_id);
    expect(e.compensation.steps.map((s: { step: string }) => s.step)).toEqual([
      "hold",
      "order/b",
      "order/a",
      "order",
    ]);
    expect(e.compensation.steps.filter((s: { error: unknown }) => s.error)).toEqual([]);
    expect(e.compensation.status).toBe("complete");
    const log = await targetLog(key);
    expect(log.map((r) => JSON.parse(r.body).undo)).toEqual([
      "release-hold",
      "confirm-hold",
      "child-b",
      "child-a",
      "order",
    ]);
    // The compensating sub-workflow's webhooks carry keys under the compensation's path.
    expect(log[0]?.headers["idempotency-key"]).toBe(`${answered.run_id}:hold:compensate/release`);
    expect(log[2]?.headers["idempotency-key"]).toBe(`${answered.run_id}:order/b:compensate`);
  });
});

describe("compensation of a run that is canceled", () => {
  it("undoes what completed before the cancel, not the step that was running", async () => {
    const key = uniqueKey("comp-cancel");
    const runId = await start({ key, last: "hold/5000" });
    await lastRunning(runId);
    const canceled = await call(`/runs/${runId}/cancel`, { method: "POST" });
    expect(canceled.status).toBe(202);
    const e = await compensated(runId);
    expect(e.status).toBe("canceled");
    expect(e.compensation.steps.map((s: { step: string }) => s.step)).toEqual([
      "label/1",
      "label/0",
      "charge",
      "reserve",
    ]);
    expect((await undos(key)).map((u) => u.what)).toEqual(ORDER);
  });
});

describe("a re-run of a compensated run", () => {
  it("runs the undone steps again, reusing a step whose compensation failed (its effect is in place)", async () => {
    const key = uniqueKey("comp-rerun");
    // reserve's undo fails: the reservation stands; charge and the labels were undone.
    const runId = await start({ key, undo: "status/500" });
    expect((await compensated(runId)).compensation.status).toBe("failed");
    const res = await call(`/runs/${runId}/rerun`, { method: "POST", headers: { prefer: "wait=20" } });
    expect(res.status).toBe(200);
    const again = (await res.json()) as Envelope;
    expect(again.rerun_of).toBe(runId);
    const reused = Object.fromEntries(
      again.steps.map((s: { id: string; reused_from: string | null }) => [s.id, s.reused_from]),
    );
    // reserve was not undone: reused; charge and label were: they run again (and what follows them).
    expect(reused).toMatchObject({ reserve: runId, charge: null, label: null, note: null, last: null });
  });
});

describe("compensation of a run that reaches its deadline", () => {
  it("undoes what completed when the deadline ends the run while a step runs", async () => {
    const key = uniqueKey("comp-deadline");
    const res = await invoke("comp-deadline", { key }, { wait: 10 });
    const answered = (await res.json()) as Envelope;
    expect(answered.status).toBe("failed");
    expect(answered.error.code).toBe("timeout");
    const e = await compensated(answered.run_id);
    expect(e.compensation).toMatchObject({
      status: "complete",
      steps: [{ step: "reserve", status: "complete" }],
    });
    const log = await targetLog(key);
    expect(log.map((r) => JSON.parse(r.body))).toEqual([{ undo: "reserve", error: "timeout" }]);
  });
});

describe("a compensation that fails", () => {
  it("is failed after its attempts, the next one still runs, and POST /runs/{id}/compensate tries it once more", async () => {
    const key = uniqueKey("comp-fail");
    // reserve's undo answers 500 twice (its two attempts), then 200.
    const runId = await start({ key, undo: "status/500,500,200" });
    const e = await compensated(runId);
    expect(e.compensation.status).toBe("failed");
    const reserve = e.compensation.steps.find((s: { step: string }) => s.step === "reserve");
    expect(reserve.status).toBe("failed");
    expect(reserve.attempts).toBe(2);
    expect(reserve.error.code).toBe("webhook_failed");
    expect(e.compensation.steps.filter((s: { status: string }) => s.status === "complete")).toHaveLength(3);

    // `notify: on [compensation_failed]` hears of it, once, signed by its webhook-id.
    const notified = await until(async () =>
      (await targetLog("comp-saga-notify")).filter((r) => JSON.parse(r.body).run_id === runId),
    );
    expect(notified).toHaveLength(1);
    expect(notified[0]?.headers["webhook-id"]).toBe(`msg_${runId}_compensation_failed`);
    expect(JSON.parse(notified[0]?.body ?? "{}")).toMatchObject({
      type: "run.compensation_failed",
      status: "failed",
      compensation: { status: "failed" },
    });
    // The listing finds it by its failed compensation.
    const listed = await until(async () => {
      const page = (await (await call("/runs?workflow=comp-saga&compensation=failed&limit=100")).json()) as {
        runs: Array<{ run_id: string; compensation: string | null }>;
      };
      return page.runs.filter((r) => r.run_id === runId);
    });
    expect(listed).toEqual([expect.objectContaining({ run_id: runId, compensation: "failed" })]);

    // Two operators at once: the failed one is tried once.
    const [a, b] = await Promise.all([
      call(`/runs/${runId}/compensate`, { method: "POST" }),
      call(`/runs/${runId}/compensate`, { method: "POST" }),
    ]);
    const answers = await Promise.all([a, b].map(async (r) => ({ status: r.status, body: await r.json() })));
    const accepted = answers.filter((x) => x.status === 202);
    expect(accepted).toEqual([{ status: 202, body: { run_id: runId, retried: 1 } }]);
    expect(answers.find((x) => x.status !== 202)).toMatchObject({
      status: 409,
      body: { code: "nothing_to_compensate" },
    });

    const after = await compensated(runId);
    expect(after.compensation.status).toBe("complete");
    // Once it completed, the filter no longer finds it.
    await until(async () => {
      const page = (await (await call("/runs?workflow=comp-saga&compensation=failed&limit=100")).json()) as {
        runs: Array<{ run_id: string }>;
      };
      return page.runs.some((r) => r.run_id === runId) ? [] : [true];
    });
    const again = after.compensation.steps.find((s: { step: string }) => s.step === "reserve");
    expect(again).toMatchObject({ status: "complete", attempts: 3, error: null });
    // Every attempt of reserve's undo carried the same key.
    const keys = (await targetLog(key))
      .filter((r) => r.method === "DELETE")
      .map((r) => r.headers["idempotency-key"]);
    expect(keys).toEqual([1, 2, 3].map(() => `${runId}:reserve:compensate`));
  });

  it("answers 409 run_active for a run still going and nothing_to_compensate when none failed", async () => {
    const key = uniqueKey("comp-409");
    const runId = await start({ key, last: "hold/3000" });
    await lastRunning(runId);
    const active = await call(`/runs/${runId}/compensate`, { method: "POST" });
    expect(active.status).toBe(409);
    expect(((await active.json()) as { code: string }).code).toBe("run_active");
    await call(`/runs/${runId}/cancel`, { method: "POST" });
    await compensated(runId);
    const none = await call(`/runs/${runId}/compensate`, { method: "POST" });
    expect(none.status).toBe(409);
    expect(((await none.json()) as { code: string }).code).toBe("nothing_to_compensate");
    const missing = await call(`/runs/${"a".repeat(64)}/compensate`, { method: "POST" });
    expect(missing.status).toBe(404);
  });
});

describe("compensation across a killed process", () => {
  it("sends every undo, each under one key, when the object is killed in the middle of the phase", async () => {
    const key = uniqueKey("comp-kill");
    // reserve's undo (the last one) is held for 2 s: the object is killed while it is in flight.
    const runId = await start({ key, undo: "hold/2000" });
    await logUntil(key, (log) => log.some((r) => r.method === "DELETE"), 15_000);
    // The kill strikes mid-phase: reserve's undo was sent and is in flight, the others are done.
    const before = await envelope(runId);
    expect(before.compensation.status).toBe("running");
    const phase = Object.fromEntries(
      before.compensation.steps.map((s: { step: string; status: string }) => [s.step, s.status]),
    );
    expect(phase).toMatchObject({ reserve: "running", charge: "complete" });
    const killedAt = Date.now();
    await runInDurableObject(runStub(runId), (_o, state) => state.abort("killed mid-compensation")).catch(
      () => {},
    );
    // A fresh incarnation (its alarm, or any request) sends what was not written as done.
    await runDurableObjectAlarm(runStub(runId)).catch(() => false);
    const e = await compensated(runId, 20_000);
    expect(e.compensation.status).toBe("complete");
    const sent = await undos(key);
    // Each undo under its own key; the one in flight when the process died may come twice, never more.
    const byKey = new Map<string, number>();
    for (const u of sent) byKey.set(u.key, (byKey.get(u.key) ?? 0) + 1);
    expect([...byKey.keys()].sort()).toEqual(
      ["charge", "label/0", "label/1", "reserve"].map((p) => `${runId}:${p}:compensate`).sort(),
    );
    // The undo in flight when the process died is sent again (once), after the kill; the rest once.
    expect(byKey.get(`${runId}:reserve:compensate`)).toBe(2);
    const reserve = sent.filter((u) => u.key === `${runId}:reserve:compensate`);
    expect(reserve[1]?.time).toBeGreaterThanOrEqual(killedAt);
    for (const p of ["charge", "label/0", "label/1"]) expect(byKey.get(`${runId}:${p}:compensate`)).toBe(1);
  });
});

describe("the event stream of a compensated run", () => {
  it("carries compensation.started and .completed after run.completed, then closes", async () => {
    const key = uniqueKey("comp-events");
    const runId = await start({ key });
    const res = await call(`/runs/${runId}/events`);
    expect(res.status).toBe(200);
    const text = await res.text(); // ends once the stream closes
    const types = [...text.matchAll(/^event: (.+)$/gm)].map((m) => m[1]);
    const at = types.indexOf("run.completed");
    expect(at).toBeGreaterThan(0);
    expect(types.slice(at + 1)).toEqual([
      "compensation.started",
      "compensation.completed",
      "compensation.started",
      "compensation.completed",
      "compensation.started",
      "compensation.completed",
      "compensation.started",
      "compensation.completed",
    ]);
  });
});
