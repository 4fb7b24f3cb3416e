/**
 * The rules of a flow key (src/run/keys/flow-key-rules.ts) on a virtual clock, over the in-memory store:
 * throttle windows, debounce groups and their max_wait_s, batches flushed by size and by time,
 * priority order, on_full skip and replace, cancel_on, the 10,000-run queue, and a key object
 * rebuilt from its storage (an eviction) in the middle of each.
 */
import { describe, expect, it } from "vitest";
import { FlowKeyRules } from "../../../src/run/keys/flow-key-rules.ts";
import {
  type AdmitRequest,
  type FlowEffects,
  type FlowSettings,
  MAX_QUEUED,
} from "../../../src/run/keys/flow-key-types.ts";
import type { KvPort } from "../../../src/run/kv-port.ts";
import { memoryKv } from "../../../src/run/memory-kv.ts";

const T0 = Date.parse("2026-11-25T12:00:00Z");
const NONE: FlowSettings = { throttle: null, debounce: null, batch: null, concurrency: null };

const fx = (): FlowEffects => ({ begin: [], cancel: [] });

/** A key over a store that counts row writes, with helpers to invoke, release and tick. */
function key(settings: Partial<FlowSettings>, kv: KvPort = memoryKv()) {
  const s = { ...NONE, ...settings };
  let rows = 0;
  const counted: KvPort = {
    ...kv,
    put: (k, v) => {
      rows++;
      kv.put(k, v);
    },
    delete: (k) => {
      rows++;
      kv.delete(k);
    },
  };
  let k = new FlowKeyRules(counted);
  const begun: string[] = [];
  const canceled: string[] = [];
  const take = (e: FlowEffects) => {
    for (const b of e.begin) begun.push(b.runId);
    for (const c of e.cancel) canceled.push(`${c.runId}:${c.code}`);
    return e;
  };
  let n = 0;
  return {
    kv,
    begun,
    canceled,
    rows: () => rows,
    admit(now: number, over: Partial<AdmitRequest> = {}) {
      const e = fx();
      const v = k.admit(
        {
          gate: "w\nk",
          runId: over.runId ?? `r${++n}`,
          settings: s,
          priority: 0,
          params: {},
          cancelOn: [],
          ...over,
        },
        now,
        e,
      );
      take(e);
      return { v, e };
    },
    release(runId: string, now: number) {
      const e = fx();
      k.release(runId, now, e);
      take(e);
    },
    wake(now: number) {
      const e = fx();
      k.wake(now, e);
      take(e);
      for (const b of e.begin) if (b.params) k.begun(b.runId);
      return e;
    },
    turn: (runId: string, now: number) => k.turn(runId, now, take(fx())),
    cancelFor: (signal: string) => {
      const e = fx();
      const ids = k.cancelFor(signal, e);
      take(e);
      return ids;
    },
    nextWake: (now: number) => k.nextWake(now),
    /** An eviction: a new key object over the same storage. */
    evict() {
      k = new FlowKeyRules(counted);
    },
    get queued() {
      return k.queued;
    },
  };
}

describe("throttle", () => {
  it("starts at most limit runs in any period window, queues the rest and starts them as the window slides", () => {
    const k = key({ throttle: { limit: 2, periodMs: 10_000 } });
    const verdicts = [0, 1, 2, 3, 4].map((i) => k.admit(T0 + i).v.outcome);
    expect(verdicts).toEqual(["start", "start", "queued", "queued", "queued"]);
    expect(k.nextWake(T0 + 10)).toBe(T0 + 10_000);
    k.wake(T0 + 9_999);
    expect(k.begun).toEqual([]);
    k.wake(T0 + 10_000);
    expect(k.begun).toEqual(["r3"]);
    k.wake(T0 + 10_001);
    expect(k.begun).toEqual(["r3", "r4"]);
    // No 10 s span ever holds more than 2 starts: r5 waits for r3's start to leave the window.
    expect(k.nextWake(T0 + 10_001)).toBe(T0 + 20_000);
    k.wake(T0 + 20_000);
    expect(k.begun).toEqual(["r3", "r4", "r5"]);
  });

  it("says when a queued run is expected to start, and keeps the queue across an eviction", () => {
    const k = key({ throttle: { limit: 1, periodMs: 60_000 } });
    k.admit(T0);
    const second = k.admit(T0 + 5).v;
    const third = k.admit(T0 + 6).v;
    expect(second).toMatchObject({ outcome: "queued", reason: "throttle", startsAt: T0 + 60_000 });
    expect(third).toMatchObject({ outcome: "queued", reason: "throttle", startsAt: T0 + 120_000 });
    k.evict();
    expect(k.queued).toBe(2);
    k.wake(T0 + 60_000);
    expect(k.begun).toEqual(["r2"]);
  });

  it("starts a higher priority first, equal priorities in invoke order", () => {
    const k = key({ throttle: { limit: 1, periodMs: 1000 } });
    k.admit(T0);
    k.admit(T0, { runId: "low", priority: -5 });
    k.admit(T0, { runId: "a", priority: 10 });
    k.admit(T0, { runId: "b", priority: 10 });
    k.admit(T0, { runId: "mid", priority: 0 });
    for (let i = 1; i <= 4; i++) k.wake(T0 + i * 1000);
    expect(k.begun).toEqual(["a", "b", "mid", "low"]);
  });

  it("refuses the invoke past 10,000 queued runs with queue_full and a Retry-After", () => {
    const k = key({ throttle: { limit: 1, periodMs: 30_000 } });
    for (let i = 0; i <= MAX_QUEUED; i++) k.admit(T0);
    expect(k.queued).toBe(MAX_QUEUED);
    expect(k.admit(T0 + 1_000).v).toEqual({ outcome: "queue_full", retryAfterS: 29 });
  });
});

describe("debounce", () => {
  it("makes one run of invokes within period_s of each other, with the last params, starting period_s after the last", () => {
    const k = key({ debounce: { periodMs: 5000, maxWaitMs: 60_000 } });
    const first = k.admit(T0, { params: { n: 1 } }).v;
    expect(first).toEqual({ outcome: "queued", runId: "r1", reason: "debounce", startsAt: T0 + 5000 });
    const joined = k.admit(T0 + 3000, { params: { n: 2 } }).v;
    expect(joined).toEqual({ outcome: "joined", runId: "r1", reason: "debounce", startsAt: T0 + 8000 });
    k.admit(T0 + 7000, { params: { n: 3 } });
    k.evict();
    expect(k.wake(T0 + 11_999).begin).toEqual([]);
    expect(k.wake(T0 + 12_000).begin).toEqual([{ runId: "r1", params: { n: 3 }, coalesced: 3 }]);
    // The group's rows are gone once its run began: the next invoke opens a new group.
    expect(k.admit(T0 + 12_001).v).toMatchObject({ outcome: "queued", runId: "r4" });
  });

  it("starts no later than max_wait_s after the first invoke, however often invokes keep coming", () => {
    const k = key({ debounce: { periodMs: 5000, maxWaitMs: 12_000 } });
    for (let t = 0; t <= 20_000; t += 1000) k.admit(T0 + t, { params: { t } });
    // The first group closed at 12 s with the 12 invokes up to 11 s (the one at 12 s opened the next).
    expect(k.nextWake(T0 + 11_500)).toBe(T0 + 12_000);
    const e = key({ debounce: { periodMs: 5000, maxWaitMs: 12_000 } });
    for (let t = 0; t <= 11_000; t += 1000) e.admit(T0 + t, { params: { t } });
    expect(e.wake(T0 + 12_000).begin).toEqual([{ runId: "r1", params: { t: 11_000 }, coalesced: 12 }]);
  });

  it("costs one row written per invoke that joins", () => {
    const k = key({ debounce: { periodMs: 5000, maxWaitMs: 60_000 } });
    k.admit(T0);
    const before = k.rows();
    for (let i = 1; i <= 10; i++) k.admit(T0 + i);
    expect(k.rows() - before).toBe(10);
  });
});

describe("batch", () => {
  it("starts a batch run as soon as max_items have arrived, with every invoke's params in order", () => {
    const k = key({ batch: { maxItems: 3, maxWaitMs: 10_000 } });
    expect(k.admit(T0, { params: { i: 0 } }).v.outcome).toBe("queued");
    expect(k.admit(T0 + 1, { params: { i: 1 } }).v).toMatchObject({ outcome: "joined", runId: "r1" });
    const full = k.admit(T0 + 2, { params: { i: 2 } });
    expect(full.e.begin).toEqual([
      { runId: "r1", params: { items: [{ i: 0 }, { i: 1 }, { i: 2 }] }, coalesced: 3 },
    ]);
    expect(k.admit(T0 + 3).v).toMatchObject({ outcome: "queued", runId: "r4", reason: "batch" });
  });

  it("starts a batch that never fills max_wait_s after its first invoke, also after an eviction", () => {
    const k = key({ batch: { maxItems: 100, maxWaitMs: 2_000 } });
    k.admit(T0, { params: { a: 1 } });
    k.admit(T0 + 500, { params: { a: 2 } });
    k.evict();
    expect(k.nextWake(T0 + 600)).toBe(T0 + 2_000);
    expect(k.wake(T0 + 2_000).begin).toEqual([
      { runId: "r1", params: { items: [{ a: 1 }, { a: 2 }] }, coalesced: 2 },
    ]);
    // Its item rows went with it.
    expect([...k.kv.list("b/")]).toEqual([]);
  });

  it("keeps every item of an open batch when more arrive after an eviction, and still fills at max_items", () => {
    const k = key({ batch: { maxItems: 4, maxWaitMs: 10_000 } });
    k.admit(T0, { params: { a: 1 } });
    k.admit(T0 + 1, { params: { a: 2 } });
    k.evict();
    k.admit(T0 + 2, { params: { a: 3 } });
    const full = k.admit(T0 + 3, { params: { a: 4 } });
    expect(full.e.begin).toEqual([
      { runId: "r1", params: { items: [{ a: 1 }, { a: 2 }, { a: 3 }, { a: 4 }] }, coalesced: 4 },
    ]);
  });

  it("a batch behind concurrency waits in the queue with its items, and begins with them when a slot frees", () => {
    const k = key({ batch: { maxItems: 2, maxWaitMs: 10_000 }, concurrency: { limit: 1, onFull: "queue" } });
    k.admit(T0, { params: { b: 1 } });
    k.admit(T0, { params: { b: 2 } }); // batch 1 full: starts (slot free)
    k.admit(T0, { params: { b: 3 } });
    const full = k.admit(T0, { params: { b: 4 } }); // batch 2 full: no slot
    expect(full.e.begin).toEqual([]);
    k.evict();
    k.release("r1", T0 + 100);
    expect(k.begun).toEqual(["r1", "r3"]);
  });
});

describe("concurrency", () => {
  it("queues beyond the limit and starts the next when a run ends", () => {
    const k = key({ concurrency: { limit: 2, onFull: "queue" } });
    expect([1, 2, 3].map(() => k.admit(T0).v.outcome)).toEqual(["start", "start", "queued"]);
    expect(k.admit(T0).v).toMatchObject({ reason: "concurrency", startsAt: null });
    k.release("r2", T0 + 1);
    expect(k.begun).toEqual(["r3"]);
    expect(k.turn("r4", T0 + 2)).toMatchObject({ outcome: "queued", reason: "concurrency" });
  });

  it("on_full skip creates no run and names the oldest active one", () => {
    const k = key({ concurrency: { limit: 1, onFull: "skip" } });
    k.admit(T0);
    expect(k.admit(T0 + 1).v).toEqual({ outcome: "skipped", runId: "r1" });
    k.release("r1", T0 + 2);
    expect(k.admit(T0 + 3).v.outcome).toBe("start");
  });

  it("on_full replace cancels the oldest active run (replaced) and starts the new one in its slot", () => {
    const k = key({ concurrency: { limit: 1, onFull: "replace" } });
    k.admit(T0);
    expect(k.admit(T0 + 1).v).toEqual({ outcome: "start", runId: "r2" });
    expect(k.canceled).toEqual(["r1:replaced"]);
    // The replaced run's own release later changes nothing.
    k.release("r1", T0 + 2);
    expect(k.admit(T0 + 3).v).toEqual({ outcome: "start", runId: "r3" });
    expect(k.canceled).toEqual(["r1:replaced", "r2:replaced"]);
  });
});

describe("cancel_on", () => {
  it("cancels the runs of the key active now (queued too), not runs invoked later, and forgets a run once it ended", () => {
    const k = key({ concurrency: { limit: 1, onFull: "queue" } });
    k.admit(T0, { cancelOn: ["order_canceled"] });
    k.admit(T0, { cancelOn: ["order_canceled"] });
    k.admit(T0, { cancelOn: ["other"] });
    k.evict();
    expect(k.cancelFor("order_canceled")).toEqual(["r1", "r2"]);
    k.release("r1", T0 + 1);
    k.release("r2", T0 + 1);
    expect(k.cancelFor("order_canceled")).toEqual([]);
    k.admit(T0 + 2, { cancelOn: ["order_canceled"] });
    expect(k.cancelFor("order_canceled")).toEqual(["r4"]);
  });
});

describe("an invoke admitted again (a kill between the key's answer and the run's creation)", () => {
  it("answers a debounce group's first invoke sent again as its group's run, not as a join of itself", () => {
    const k = key({ debounce: { periodMs: 5000, maxWaitMs: 60_000 } });
    const first = k.admit(T0, { runId: "a", params: { n: 1 } }).v;
    expect(first).toMatchObject({ outcome: "queued", runId: "a", reason: "debounce" });
    k.admit(T0 + 1000, { runId: "b", params: { n: 2 } });
    // "a" again: still its group's run, due where the group is; the group keeps b's params and two invokes.
    expect(k.admit(T0 + 2000, { runId: "a", params: { n: 1 } }).v).toEqual({
      outcome: "queued",
      runId: "a",
      reason: "debounce",
      startsAt: T0 + 6000,
    });
    expect(k.turn("a", T0 + 6000)).toEqual({ outcome: "start", params: { n: 2 }, coalesced: 2 });
  });

  it("answers a run that holds a slot as started, without taking a second slot", () => {
    const k = key({ concurrency: { limit: 1, onFull: "queue" } });
    expect(k.admit(T0, { runId: "a" }).v).toEqual({ outcome: "start", runId: "a" });
    expect(k.admit(T0 + 1, { runId: "a" }).v).toEqual({ outcome: "start", runId: "a" });
    expect(k.admit(T0 + 2, { runId: "b" }).v.outcome).toBe("queued");
    // One release of "a" frees its one slot: "b" begins.
    k.release("a", T0 + 3);
    expect(k.begun).toEqual(["b"]);
  });

  it("answers a queued run where it waits, without queueing it twice", () => {
    const k = key({ concurrency: { limit: 1, onFull: "queue" } });
    k.admit(T0, { runId: "a" });
    const queued = k.admit(T0 + 1, { runId: "b" }).v;
    expect(k.admit(T0 + 2, { runId: "b" }).v).toEqual(queued);
    expect(k.queued).toBe(1);
  });
});
