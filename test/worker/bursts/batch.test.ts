/**
 * invoke.batch (docs/triggers.md, "Shaping bursts"): a burst of events is collected into runs of
 * `max_items`, each event in exactly one run, in arrival order; a partial batch runs after
 * `max_wait_s`; an event that fails the params schema is refused and not added; an open batch
 * survives its key object's eviction.
 */
import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { call, type Envelope, invoke, uniqueKey, waitForRun } from "../harness.ts";
import { burst } from "./bursts.ts";

const flowKeys = (env as unknown as { FLOW_KEYS: DurableObjectNamespace }).FLOW_KEYS;

describe("invoke.batch", () => {
  it("collects 50 simultaneous events into 10 runs of 5, every event in exactly one", async () => {
    const group = uniqueKey("batch");
    // max_wait_s 30: however long the burst takes to reach the key, only the size closes a batch.
    const answers = await burst(
      "burst-batch-size",
      Array.from({ length: 50 }, (_, n) => ({ group, n })),
    );
    expect(answers.map((a) => a.status)).toEqual(Array(50).fill(202));
    const ids = [...new Set(answers.map((a) => a.body.run_id))];
    expect(ids).toHaveLength(10);
    const runs: Envelope[] = await Promise.all(ids.map((id) => waitForRun(id, {}, 15_000)));
    expect(runs.map((r) => r.status)).toEqual(Array(10).fill("complete"));
    expect(runs.map((r) => r.coalesced)).toEqual(Array(10).fill(5));
    const seen = runs.flatMap((r) => r.output.result as number[]).sort((a, b) => a - b);
    expect(seen).toEqual([...Array(50).keys()]);
    // Each invoke was answered with the run its event is in.
    for (const [n, a] of answers.entries()) {
      const run = runs.find((r) => r.run_id === a.body.run_id);
      expect(run?.output.result).toContain(n);
    }
  });

  it("runs a partial batch max_wait_s after its first event, its items in arrival order, without a refused event", async () => {
    const group = uniqueKey("batch-partial");
    const before = Date.now();
    const first = await invoke("burst-batch", { group, n: 7 });
    const afterFirst = Date.now();
    const bad = await invoke("burst-batch", { group, n: "eight" });
    expect(bad.status).toBe(422);
    expect(((await bad.json()) as { code: string }).code).toBe("invalid_params");
    await invoke("burst-batch", { group, n: 9 });
    const { run_id } = (await first.json()) as { run_id: string };
    // The key's own record: the batch is due max_wait_s (1 s) after it took the first event.
    const queued = (await (await call(`/runs/${run_id}`)).json()) as Envelope;
    expect(queued.status).toBe("queued");
    const due = Date.parse(queued.queue.starts_at);
    expect(due - 1000).toBeGreaterThanOrEqual(before);
    expect(due - 1000).toBeLessThanOrEqual(afterFirst);
    const run = await waitForRun(run_id, {}, 10_000);
    expect(run.params).toEqual({
      items: [
        { group, n: 7 },
        { group, n: 9 },
      ],
    });
    expect(run.output.result).toEqual([7, 9]);
    // It began when due, not before (its deadline is counted from its begin; timeout_s 300).
    expect(Date.parse(run.deadline) - 300_000).toBeGreaterThanOrEqual(due);
  });

  it("keeps an open batch through its key object's eviction", async () => {
    const group = uniqueKey("batch-evict");
    const answers = await burst(
      "burst-batch",
      [1, 2, 3].map((n) => ({ group, n })),
    );
    await evictDurableObject(flowKeys.get(flowKeys.idFromName(`burst-batch\n${group}`)));
    const later = await invoke("burst-batch", { group, n: 4 });
    const id = answers[0]?.body.run_id as string;
    const body = await later.text();
    expect(later.status, body).toBe(202);
    expect((JSON.parse(body) as { run_id: string }).run_id).toBe(id);
    const run = await waitForRun(id, {}, 10_000);
    expect((run.output.result as number[]).sort()).toEqual([1, 2, 3, 4]);
  });

  it("keeps every answered event of an open batch when its key object is killed", async () => {
    const group = uniqueKey("batch-kill");
    const answers = await burst(
      "burst-batch",
      [1, 2, 3].map((n) => ({ group, n })),
    );
    const stub = flowKeys.get(flowKeys.idFromName(`burst-batch\n${group}`));
    await runInDurableObject(stub, (_o, state) => state.abort("flow key killed")).catch(() => {});
    const id = answers[0]?.body.run_id as string;
    const run = await waitForRun(id, {}, 10_000);
    expect(run.status).toBe("complete");
    expect((run.output.result as number[]).sort()).toEqual([1, 2, 3]);
  });
});
