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
    expect(statuses.filter((s) => s === "accepted")).toHaveLength(2);
    expect(statuses.filter((s) => s === "queued")).toHaveLength(8);
    const runs: Envelope[] = await Promise.all(answers.map((a) => waitForRun(a.body.run_id, {}, 30_000)));
    expect(runs.map((r) => r.status)).toEqual(Array(10).fill("complete"));
    // Every invoke's own params reached the target once.
    const got = await arrivals(group);
    expect(got.map((a) => a.body.n).sort((a, b) => Number(a) - Number(b))).toEqual([...Array(10).keys()]);
    // No second (less timer jitter) held more than two starts: 10 starts take 4 s. A start is the
    // run's own (its first step's start), not the webhook's arrival, which adds the call's latency.
    const times = runs.map((r) => Date.parse(r.steps[0]?.started_at ?? "")).sort((a, b) => a - b);
    expect(times.every(Number.isFinite)).toBe(true);
    for (let i = 2; i < times.length; i++)
      expect((times[i] as number) - (times[i - 2] as number)).toBeGreaterThan(1000 - 150);
    expect((times[9] as number) - (times[0] as number)).toBeGreaterThan(4000 - 150);
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
