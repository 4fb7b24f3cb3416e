/**
 * invoke.throttle (docs/triggers.md, "Shaping bursts"): a burst is delayed, never refused or
 * lost: at most `limit` runs of a key start in any `period_s`, every invoke's run starts in the
 * end, other keys are not held back, and the key's queue survives its object's eviction.
 */
import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { type Envelope, uniqueKey, waitForRun } from "../harness.ts";
import { arrivals, burst, envelope } from "./bursts.ts";

const flowKeys = (env as unknown as { FLOW_KEYS: DurableObjectNamespace }).FLOW_KEYS;

describe("invoke.throttle", () => {
  it("starts a burst of 10 at most 2 per second, loses none, and queues the rest with when they start", async () => {
    const group = uniqueKey("throttle");
    const answers = await burst(
      "burst-throttle",
      Array.from({ length: 10 }, (_, n) => ({ group, n })),
    );
    expect(answers.map((a) => a.status)).toEqual(Array(10).fill(202));
    const statuses = answers.map((a) => a.body.status);
    expect(statuses.every((s) => s === "accepted" || s === "queued")).toBe(true);
    expect(statuses.filter((s) => s === "accepted").length).toBeLessThanOrEqual(2);
    // The key's plan, as each queued invoke was told it: when its run starts.
    const planned = new Map<string, number>();
    for (const a of answers.filter((x) => x.body.status === "queued")) {
      const e = await envelope(a.body.run_id);
      if (e.status === "queued") planned.set(a.body.run_id, Date.parse(e.queue.starts_at));
    }
    const runs: Envelope[] = await Promise.all(answers.map((a) => waitForRun(a.body.run_id, {}, 30_000)));
    expect(runs.map((r) => r.status)).toEqual(Array(10).fill("complete"));
    // Every invoke's own params reached the target once.
    const got = await arrivals(group);
    expect(got.map((a) => a.body.n).sort((a, b) => Number(a) - Number(b))).toEqual([...Array(10).keys()]);
    // The plan never puts a third start within a second of two others (the key's own arithmetic;
    // the exact sliding window is pinned on a virtual clock in test/run/keys/flow-key-rules.test.ts)...
    const plan = [...planned.values()].sort((a, b) => a - b);
    expect(plan.length).toBeGreaterThanOrEqual(6);
    for (let i = 2; i < plan.length; i++)
      expect((plan[i] as number) - (plan[i - 2] as number)).toBeGreaterThanOrEqual(1000);
    // ...and no queued run began before its planned start (its deadline is counted from its begin).
    for (const r of runs) {
      const at = planned.get(r.run_id);
      if (at !== undefined) expect(Date.parse(r.deadline) - 10_000, r.run_id).toBeGreaterThanOrEqual(at);
    }
  });

  it("tells a queued run's caller why it waits and when it is expected to start", async () => {
    const group = uniqueKey("throttle-queue");
    const before = Date.now();
    const answers = await burst(
      "burst-throttle",
      [0, 1, 2].map((n) => ({ group, n })),
    );
    const after = Date.now();
    const queued = answers.find((a) => a.body.status === "queued");
    expect(queued).toBeDefined();
    // The third of three within a second waits about a second.
    const e = await envelope(queued?.body.run_id as string);
    expect(e.status).toBe("queued");
    expect(e.queue.reason).toBe("throttle");
    // A second after the first start of the burst (however long the burst took to send).
    const at = Date.parse(e.queue.starts_at);
    expect(at).toBeGreaterThanOrEqual(before + 1000);
    expect(at).toBeLessThanOrEqual(after + 1000);
    const done = await waitForRun(queued?.body.run_id as string, {}, 10_000);
    expect(done.queue).toBeNull();
    expect(done.coalesced).toBe(1);
  });

  it("holds back only its own key: another group's run starts at once", async () => {
    const busy = uniqueKey("throttle-busy");
    await burst(
      "burst-throttle",
      [0, 1, 2, 3].map((n) => ({ group: busy, n })),
    );
    const [other] = await burst("burst-throttle", [{ group: uniqueKey("throttle-free"), n: 0 }]);
    expect(other?.body.status).toBe("accepted");
  });

  it("starts every queued run after the key's object is evicted while they wait", async () => {
    const group = uniqueKey("throttle-evict");
    const answers = await burst(
      "burst-throttle",
      [0, 1, 2, 3, 4, 5].map((n) => ({ group, n })),
    );
    await evictDurableObject(flowKeys.get(flowKeys.idFromName(`burst-throttle\n${group}`)));
    const runs: Envelope[] = await Promise.all(answers.map((a) => waitForRun(a.body.run_id, {}, 30_000)));
    expect(runs.map((r) => r.status)).toEqual(Array(6).fill("complete"));
    expect((await arrivals(group)).length).toBe(6);
  });

  it("starts every queued run after the key's object is killed while they wait", async () => {
    const group = uniqueKey("throttle-kill");
    const answers = await burst(
      "burst-throttle",
      [0, 1, 2, 3, 4].map((n) => ({ group, n })),
    );
    const stub = flowKeys.get(flowKeys.idFromName(`burst-throttle\n${group}`));
    await runInDurableObject(stub, (_o, state) => state.abort("flow key killed")).catch(() => {});
    const runs: Envelope[] = await Promise.all(answers.map((a) => waitForRun(a.body.run_id, {}, 30_000)));
    expect(runs.map((r) => r.status)).toEqual(Array(5).fill("complete"));
    expect((await arrivals(group)).map((a) => a.body.n).sort()).toEqual([0, 1, 2, 3, 4]);
  });
});
