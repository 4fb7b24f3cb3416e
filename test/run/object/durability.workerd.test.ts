/**
 * A run survives its Durable Object being evicted: it resumes from storage without repeating
 * finished steps, and its deadline holds through the alarm even when nothing else wakes it.
 */

import { evictDurableObject, runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
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
  it("resumes an evicted run without repeating its finished steps", async () => {
    const key = uniqueKey("evict");
    const runId = await started("two-phase", { key });
    // Wait until the first step has finished and the second is in flight.
    for (let i = 0; i < 100 && (await targetLog(key)).length < 2; i++)
      await new Promise((r) => setTimeout(r, 20));
    await evictDurableObject(stubOf(runId));
    const e = await waitForRun(runId);
    expect(e.status).toBe("complete");
    const log = await targetLog(key);
    const first = log.filter((r) => r.path === "/echo");
    const second = log.filter((r) => r.path.startsWith("/slow"));
    expect(first).toHaveLength(1);
    expect(second.length).toBeGreaterThanOrEqual(1);
    expect(new Set(second.map((r) => r.headers["idempotency-key"]))).toEqual(new Set([`${runId}:second`]));
  });

  it("ends an evicted run at its deadline when only the alarm wakes it", async () => {
    const runId = await started("deadline");
    await new Promise((r) => setTimeout(r, 100));
    await evictDurableObject(stubOf(runId));
    await new Promise((r) => setTimeout(r, 2100));
    // Due at the deadline: it may have run on its own already; if not, run it now.
    await runDurableObjectAlarm(stubOf(runId));
    const res = await call(`/runs/${runId}`);
    const e = (await res.json()) as { status: string; error: { code: string } };
    expect(e.status).toBe("failed");
    expect(e.error.code).toBe("timeout");
  });
});

describe("retention", () => {
  it("keeps a finished run until RUN_RETENTION_S has passed", async () => {
    const res = await invoke("basic", { items: [] }, { wait: 10 });
    const { run_id } = (await res.json()) as { run_id: string };
    // Running whatever alarm is due, early, must not delete the run.
    await runDurableObjectAlarm(stubOf(run_id));
    expect((await call(`/runs/${run_id}`)).status).toBe(200);
  });
});
