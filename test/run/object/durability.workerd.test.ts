/**
 * A run survives its Durable Object being evicted: it resumes from storage without repeating
 * finished steps, and its deadline holds through the alarm even when nothing else wakes it.
 */

import { evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { logUntil } from "../../reliability/run-helpers.ts";
import { poll } from "../../support/poll.ts";
import { call, invoke, targetLog, uniqueKey, waitForRun } from "../../worker/harness.ts";

function stubOf(runId: string) {
  return env.RUNS.get(env.RUNS.idFromString(runId));
}

async function started(name: string, body: unknown = {}): Promise<string> {
  const res = await invoke(name, body);
  expect(res.status).toBe(202);
  return ((await res.json()) as { run_id: string }).run_id;
}

describe("eviction", () => {
  it("resumes a run killed mid-step without repeating its finished steps", async () => {
    const key = uniqueKey("evict");
    const runId = await started("two-phase", { key });
    // Wait until the first step has finished and the second is in flight.
    const [, inFlight] = await logUntil(key, (log) => log.length >= 2);
    // The process dies mid-step (an eviction would wait for the call to end): the second call,
    // answered after 800 ms, is still in flight.
    const killedAt = Date.now();
    await runInDurableObject(stubOf(runId), (_o, state) => state.abort("killed mid-step")).catch(() => {});
    expect(killedAt).toBeLessThan((inFlight?.time as number) + 800);
    const e = await waitForRun(runId);
    expect(e.status).toBe("complete");
    const log = await targetLog(key);
    const first = log.filter((r) => r.path === "/echo");
    const second = log.filter((r) => r.path.startsWith("/slow"));
    expect(first).toHaveLength(1);
    // The step cut off by the eviction ran again, once, after it, under the same key.
    expect(second).toHaveLength(2);
    expect(second[1]?.time).toBeGreaterThanOrEqual(killedAt);
    expect(new Set(second.map((r) => r.headers["idempotency-key"]))).toEqual(new Set([`${runId}:second`]));
  });

  it("ends an evicted run at its deadline when only the alarm wakes it", async () => {
    const runId = await started("deadline");
    const running = await poll(
      `${runId}'s step running`,
      async () => (await (await call(`/runs/${runId}`)).json()) as { status: string; deadline: string },
      (e) => e.status === "running",
    );
    // Its alarm is at its deadline: what ends it when nothing else wakes it.
    const deadline = Date.parse(running.deadline);
    expect(await runInDurableObject(stubOf(runId), (_o, state) => state.storage.getAlarm())).toBe(deadline);
    await evictDurableObject(stubOf(runId));
    await poll(
      "the run's deadline to pass",
      () => Date.now(),
      (now) => now > deadline,
    );
    // The alarm ends it: run here, or already on its own when it was due.
    const askedAt = Date.now();
    const ranNow = await runDurableObjectAlarm(stubOf(runId));
    const res = await call(`/runs/${runId}`);
    const e = (await res.json()) as { status: string; error: { code: string }; finished_at: string };
    expect(e.status).toBe("failed");
    expect(e.error.code).toBe("timeout");
    expect(ranNow || Date.parse(e.finished_at) < askedAt).toBe(true);
  });
});
