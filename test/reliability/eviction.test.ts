/**
 * Durability under eviction and the retention alarm. A run's Durable Object can be evicted at
 * any moment; woken again (a request, or its alarm) it resumes from storage: a finished step is
 * never sent again, the step that was in flight may be re-sent with the same Idempotency-Key,
 * and the steps after it run once.
 *
 * Retention: time cannot be faked inside workerd, so for expiry the tests move the stored
 * `finished_at` back by more than RUN_RETENTION_S (7 days in wrangler.toml) — the one place this
 * suite reads the run's storage layout (the KV key `run` holds the run document as JSON; steps
 * are under `step/`).
 */

import { evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { poll } from "../support/poll.ts";
import { call, invoke, run, targetLog, uniqueKey, waitForRun } from "../worker/harness.ts";
import { logUntil, requestsOf, runStub, sleep, startRun } from "./run-helpers.ts";

const RETENTION_MS = 7 * 24 * 3600 * 1000;

describe("eviction mid-run", () => {
  it("resumes on its alarm: the finished step is not re-sent and the next step runs once", async () => {
    const key = uniqueKey("evict-alarm");
    const runId = await startRun("rel-sequence", { key, slow_ms: 800 });
    await logUntil(key, (log) => requestsOf(log, runId, "middle").length === 1);
    await evictDurableObject(runStub(runId));
    expect(await runDurableObjectAlarm(runStub(runId))).toBe(true);
    const e = await waitForRun(runId);
    expect(e.status).toBe("complete");
    expect(e.steps.map((s: { status: string }) => s.status)).toEqual(["complete", "complete", "complete"]);
    const log = await targetLog(key);
    expect(requestsOf(log, runId, "first")).toHaveLength(1);
    expect(requestsOf(log, runId, "last")).toHaveLength(1);
    const middle = requestsOf(log, runId, "middle");
    expect(middle.length).toBeGreaterThanOrEqual(1);
    expect(middle.length).toBeLessThanOrEqual(2);
    // Every request of the run carries the key of one of its steps.
    expect(log).toHaveLength(2 + middle.length);
  });

  it("keeps the started_at of a step that was under way when the run was written, once it resumes after an eviction", async () => {
    // One slow webhook: the 202 writes the run with the step in flight, then the object is evicted.
    const runId = await startRun("listing-slow", { ms: 1500 });
    const before = (await (await call(`/runs/${runId}`)).json()) as { steps: Array<{ started_at: string }> };
    const startedAt = before.steps[0]?.started_at as string;
    expect(startedAt).toBeTruthy();
    // Killed 300 ms into the step, not just evicted: the attempt in flight dies with the object
    // and is made again.
    await poll(
      "300 ms into the step",
      () => Date.now(),
      (now) => now >= Date.parse(startedAt) + 300,
    );
    const killedAt = Date.now();
    await runInDurableObject(runStub(runId), (_o, state) => state.abort("killed mid-step")).catch(() => {});
    expect(await runDurableObjectAlarm(runStub(runId))).toBe(true);
    const e = await waitForRun(runId);
    expect(e.status).toBe("complete");
    expect(e.steps[0].started_at).toBe(startedAt);
    // Its duration counts from that first start: the time before the kill, then the resumed 1.5 s.
    expect(e.steps[0].metrics.duration_ms).toBeGreaterThanOrEqual(killedAt - Date.parse(startedAt) + 1500);
  });

  it("survives being evicted again and again: every step is sent at most twice, finished ones once", async () => {
    const key = uniqueKey("evict-repeat");
    const runId = await startRun("rel-sequence", { key, slow_ms: 300 });
    const evictedAt: number[] = [];
    for (let i = 0; i < 6; i++) {
      await sleep(150); // paces the evictions across the run (not a wait for anything)
      const at = Date.now();
      const done = await evictDurableObject(runStub(runId)).then(
        () => true,
        // Not running at this instant (nothing woke it yet): the next request will.
        () => false,
      );
      if (done) evictedAt.push(at);
      await call(`/runs/${runId}`);
    }
    const e = await waitForRun(runId);
    expect(e.status).toBe("complete");
    // The evictions struck while the run was going, not only after it.
    expect(evictedAt.some((t) => t < Date.parse(e.finished_at))).toBe(true);
    const log = await targetLog(key);
    for (const [i, step] of ["first", "middle", "last"].entries()) {
      const sent = requestsOf(log, runId, step);
      expect(sent.length, step).toBeGreaterThanOrEqual(1);
      expect(sent.length, step).toBeLessThanOrEqual(2);
      // Sent again only when an eviction fell while it was in flight, never once it had finished.
      const finished = Date.parse(e.steps[i].finished_at);
      if (sent.length === 2) {
        expect(
          evictedAt.some((t) => t >= (sent[0] as { time: number }).time && t <= finished),
          step,
        ).toBe(true);
      }
      for (const r of sent) expect(r.time, step).toBeLessThanOrEqual(finished);
    }
    // The last step only starts after the middle one finished, so it is never in flight twice.
    expect(requestsOf(log, runId, "last")).toHaveLength(1);
    expect(e.output.status).toBe(200);
  });

  it("keeps a finished run intact through eviction", async () => {
    const key = uniqueKey("evict-finished");
    const e = await run("rel-sequence", { key, slow_ms: 10 });
    await evictDurableObject(runStub(e.run_id));
    const res = await call(`/runs/${e.run_id}`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual(e);
    expect(await targetLog(key)).toHaveLength(3);
  });
});

describe("retention", () => {
  it("does not delete a finished run when its alarm runs before expiry", async () => {
    // Answered before it ends, the run guards its own listing entry with an alarm.
    const { run_id } = (await (await invoke("rel-open", { a: 1 })).json()) as { run_id: string };
    await waitForRun(run_id);
    // That alarm, run early, must leave the run alone.
    expect(await runDurableObjectAlarm(runStub(run_id))).toBe(true);
    const res = await call(`/runs/${run_id}`);
    expect(res.status).toBe(200);
    expect(((await res.json()) as { output: unknown }).output).toEqual({ result: 1 });
  });

  it("deletes the run's storage once RUN_RETENTION_S has passed: the run is then not found", async () => {
    const e = await run("rel-open", {});
    const expired = new Date(Date.now() - RETENTION_MS - 60_000).toISOString();
    await runInDurableObject(runStub(e.run_id), (_o, state) => {
      // The `run` row holds the document (and the records that ride with it): src/run/run-store.ts.
      const row = JSON.parse(state.storage.kv.get<string>("run") ?? "null") as {
        doc: Record<string, unknown>;
      };
      const doc = row.doc;
      doc.created_at = expired;
      doc.finished_at = expired;
      state.storage.kv.put("run", JSON.stringify(row));
    });
    // A fresh incarnation reads the moved-back time from storage, as after a real week asleep.
    // (The listing shard's sweep deletes it without a read: test/worker/run-listing.test.ts.)
    await evictDurableObject(runStub(e.run_id));
    const res = await call(`/runs/${e.run_id}`);
    expect(res.status).toBe(404);
    expect(((await res.json()) as { code: string }).code).toBe("run_not_found");
    const left = await runInDurableObject(
      runStub(e.run_id),
      (_o, state) => [...state.storage.kv.list()].length,
    );
    expect(left).toBe(0);
  });
});
