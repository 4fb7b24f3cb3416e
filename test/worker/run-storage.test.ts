/**
 * What a run writes to its Durable Object (SPEC 15: each SQLite row written is billed): a
 * finished transform run writes at most 3 rows whatever its length, the pinned definition once,
 * and records too large for one stored value get rows of their own and read back after an
 * eviction.
 */
import { env, evictDurableObject, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import workflowBundle from "workflow-bundle";
import type { Bundle, JsonObject } from "../../src/bundle.ts";
import type { RunObject } from "../../src/run/run-object.ts";
import { call } from "./harness.ts";

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
  it("a finished 10-step transform run writes 3 rows: the definition once, the run at start and end", async () => {
    const { envelope, puts } = await countedRun("rows-ten");
    expect(envelope?.status).toBe("complete");
    expect(envelope?.steps).toHaveLength(10);
    expect(puts).toEqual(["def", "run", "run"]);
  });

  it("a finished 50-step transform run writes 3 rows too", async () => {
    const { envelope, puts } = await countedRun("rows-fifty");
    expect(envelope?.status).toBe("complete");
    expect(envelope?.steps).toHaveLength(50);
    expect(puts.length).toBeLessThanOrEqual(3);
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
