/**
 * What a run writes to its Durable Object (docs/operations.md: each SQLite row written is billed): a
 * transform run that finishes before its answer leaves writes 1 row whatever its length, its
 * pinned definition inside; a run still active when it answers is written before that answer,
 * with its deadline alarm, and survives an eviction right after it; after an eviction between
 * checkpoints a transform runs again but a sent webhook is never sent again; records too large
 * for one stored value get rows of their own and read back after an eviction.
 */

import { env, evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import workflowBundle from "workflow-bundle";
import type { Bundle, JsonObject } from "../../../src/bundle.ts";
import type { RunObject } from "../../../src/run/object/run-object.ts";
import { logUntil } from "../../reliability/run-helpers.ts";
import { poll } from "../../support/poll.ts";
import { call, invoke, targetLog, uniqueKey, waitForRun } from "../../worker/harness.ts";
import { shardHolds } from "../../worker/listing-shard.ts";
import { storedRows } from "../../worker/stored-rows.ts";

/** Starts `name` in a fresh run object whose KV writes are counted, and waits for its end. */
async function countedRun(name: string, params: JsonObject = {}) {
  const bundle = workflowBundle as Bundle;
  const key = bundle.invocable[name] as string;
  const stub = env.RUNS.get(env.RUNS.newUniqueId());
  const puts: string[] = [];
  const started = await runInDurableObject(stub, async (instance: RunObject, state) => {
    const kv = state.storage.kv;
    const put = kv.put.bind(kv);
    kv.put = (k: string, v: unknown) => {
      puts.push(k);
      put(k, v);
    };
    return instance.start({
      workflowKey: key,
      params,
      request: { headers: {} },
      bodyHash: null,
      idempotencyKey: null,
      waitMs: 20_000,
    });
  });
  if (started.outcome !== "started") throw new Error(`a new run starts, not ${started.outcome}`);
  return { stub, runId: started.runId, envelope: started.envelope, puts };
}

describe("rows a run writes", () => {
  it("a 10-step transform run that finishes before its answer writes 1 row at the end, its definition in it or kept by its version", async () => {
    const { stub, envelope, puts } = await countedRun("rows-ten");
    expect(envelope?.status).toBe("complete");
    expect(envelope?.steps).toHaveLength(10);
    expect(puts).toEqual(["run"]);
    expect(["inside", "version"]).toContain((await storedRows(stub)).definition);
  });

  it("a finished 50-step transform run writes 1 row too", async () => {
    const { envelope, puts } = await countedRun("rows-fifty");
    expect(envelope?.status).toBe("complete");
    expect(envelope?.steps).toHaveLength(50);
    expect(puts).toEqual(["run"]);
  });

  it("a finished run written again later (a re-run's claim) keeps its definition through an eviction", async () => {
    const { stub, runId, envelope, puts } = await countedRun("rows-ten");
    const claimed = await runInDurableObject(stub, (o: RunObject) => o.rerunStarted("another-run", false));
    expect(claimed).toBe("claimed");
    expect(puts).toEqual(["run", "run"]);
    await evictDurableObject(stub);
    const again = (await (await call(`/runs/${runId}`)).json()) as typeof envelope;
    expect(again).toEqual(envelope);
    const graph = await call(`/runs/${runId}/graph`);
    expect(graph.status).toBe(200);
    // Its pinned definition is what a re-run from a step runs on.
    const res = await call(`/runs/${runId}/rerun`, {
      method: "POST",
      headers: { prefer: "wait=10", "content-type": "application/json" },
      body: JSON.stringify({ from: "s2", definition: "pinned" }),
    });
    expect(res.status).toBe(200);
    const rerun = (await res.json()) as typeof envelope;
    expect(rerun?.status).toBe("complete");
    expect(rerun?.output).toEqual(envelope?.output);
  });

  it("a run that finishes before its answer keeps no deadline alarm: one guard within 10 s, gone once its entry is written", async () => {
    const { stub, envelope } = await countedRun("rows-ten");
    expect(envelope?.status).toBe("complete");
    // The guard of what the run owes after its answer, never the run's deadline (300 s away).
    const alarm = await runInDurableObject(stub, (_o, state) => state.storage.getAlarm());
    expect(alarm).not.toBeNull();
    expect((alarm as number) - Date.now()).toBeLessThan(10_000);
    // Once the shard has written its batch, the guard asks, hears it is durable, and arms nothing more.
    await poll(
      `the shard to write ${envelope?.run_id}'s entry`,
      () => shardHolds(envelope?.run_id as string, "rows-ten"),
      (h) => h.written,
    );
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    expect(await runInDurableObject(stub, (_o, state) => state.storage.getAlarm())).toBeNull();
  });

  it("a run still active when it answers is written before the answer, alarm included, and survives an eviction right after it", async () => {
    const res = await invoke("two-phase", { key: `answer-${crypto.randomUUID()}` });
    expect(res.status).toBe(202);
    const { run_id } = (await res.json()) as { run_id: string };
    const stub = env.RUNS.get(env.RUNS.idFromString(run_id));
    const stored = await storedRows(stub);
    expect(stored.keys).toContain("run");
    expect(stored.definition).not.toBe("none");
    expect(await runInDurableObject(stub, (_o, state) => state.storage.getAlarm())).not.toBeNull();
    await evictDurableObject(stub);
    const e = await waitForRun(run_id);
    expect(e.status).toBe("complete");
    expect(e.steps.map((s: { status: string }) => s.status)).toEqual(["complete", "complete"]);
  });

  it("after an eviction between checkpoints, a transform is computed again and a sent webhook is not sent again", async () => {
    const key = uniqueKey("between-checkpoints");
    const res = await invoke("checkpoint-resume", { key });
    expect(res.status).toBe(202);
    const { run_id } = (await res.json()) as { run_id: string };
    const stub = env.RUNS.get(env.RUNS.idFromString(run_id));
    // The first webhook has answered and the second is in flight.
    await logUntil(key, (log) => log.length >= 2);
    const keys = await runInDurableObject(stub, (_o, state) =>
      [...state.storage.kv.list<string>()].map(([k]) => k),
    );
    // The webhook's record is its checkpoint; the transform after it has not been written yet.
    expect(keys).toContain("step/first");
    const row = await runInDurableObject(stub, (_o, state) => state.storage.kv.get<string>("run") ?? "");
    expect(row).not.toContain('"between"');
    await evictDurableObject(stub);
    const e = await waitForRun(run_id);
    expect(e.status).toBe("complete");
    const log = await targetLog(key);
    expect(log.filter((r) => r.path === "/echo")).toHaveLength(1);
    const second = log.filter((r) => r.path.startsWith("/slow"));
    expect(second.length).toBeGreaterThanOrEqual(1);
    expect(new Set(second.map((r) => r.headers["idempotency-key"]))).toEqual(new Set([`${run_id}:second`]));
    // The transform computed again from the stored webhook answer hands on the same value.
    expect(e.steps[1].output).toEqual({ result: { phase: 1, key } });
    for (const r of second) expect(JSON.parse(r.body)).toEqual({ phase: 1, key });
  });

  it("records too large to share one stored value get rows of their own, and read back after an eviction", async () => {
    const text = "x".repeat(60_000);
    const { stub, runId, envelope, puts } = await countedRun("rows-spill", { text });
    expect(envelope?.status).toBe("complete");
    // 20 outputs of 60 kB: more than one value holds; some moved to their own rows.
    expect(puts.filter((k) => k.startsWith("step/")).length).toBeGreaterThan(0);
    const sizes = await runInDurableObject(stub, (_o, state) =>
      [...state.storage.kv.list<string>()].map(([k, v]) => [k, v.length] as const),
    );
    for (const [, size] of sizes) expect(size).toBeLessThan(1.1 * 1024 * 1024);
    await evictDurableObject(stub);
    const again = (await (await call(`/runs/${runId}`)).json()) as typeof envelope;
    expect(again).toEqual(envelope);
    expect(again?.steps.every((s) => (s.output as { result: string }).result === text)).toBe(true);
  });
});
