/**
 * The decisions a run's Durable Object performs (src/run/lifecycle/run-plan.ts), as pure rules over a run's
 * facts and the clock: when a run is woken before and after its first write, how the listing is
 * retried, what a finished run owes and when its alarm goes.
 */
import { describe, expect, it } from "vitest";
import {
  effectTiming,
  FIRST_WRITE_MS,
  LISTING_GUARD_MS,
  LISTING_RETRY_MAX_MS,
  LISTING_RETRY_MS,
  type RunFacts,
  RunPlan,
} from "../../../src/run/lifecycle/run-plan.ts";

const T0 = Date.parse("2026-11-25T12:00:00Z");

function facts(over: Partial<RunFacts> = {}): RunFacts {
  const status = over.status ?? "running";
  return {
    status,
    createdMs: T0,
    deadlineMs: T0 + 300_000,
    stored: true,
    next: T0 + 60_000,
    gates: [],
    delivers: false,
    listKey: status,
    exports: false,
    judges: false,
    compensatingUntil: null,
    ...over,
  };
}

describe("when an effect starts", () => {
  it("registers a keyed wait and asks a key at once, gives a slot back next, and leaves the log line, listing and spans for after the answer", () => {
    const gate = {
      name: "k",
      settings: { throttle: null, debounce: null, batch: null, concurrency: null },
      cancelOn: [],
    };
    expect(effectTiming({ type: "register_wait", name: "paid", key: "o-1" })).toBe("now");
    expect(effectTiming({ type: "ask_turn", gate, admit: false, priority: 0, params: {} })).toBe("now");
    expect(effectTiming({ type: "release", gates: ["k"] })).toBe("soon");
    expect(effectTiming({ type: "deliver" })).toBe("soon");
    for (const type of ["log", "list", "export", "judge"] as const)
      expect(effectTiming({ type })).toBe("answer");
  });
});

describe("an active run's wake-up", () => {
  it("is a timer before the run is written: when the listing is due to see it, or its deadline if sooner", () => {
    const plan = new RunPlan();
    expect(plan.activeWake(facts({ stored: false }), T0, false)).toEqual({
      at: T0 + FIRST_WRITE_MS,
      durable: false,
    });
    expect(plan.activeWake(facts({ stored: false, deadlineMs: T0 + 1_000 }), T0, false)).toEqual({
      at: T0 + 1_000,
      durable: false,
    });
  });

  it("is the alarm once written: its next wake-up, no later than the listing's first look while unlisted", () => {
    const plan = new RunPlan();
    expect(plan.activeWake(facts(), T0, false)).toEqual({ at: T0 + FIRST_WRITE_MS, durable: true });
    plan.listResult("running", true);
    expect(plan.activeWake(facts(), T0, false)).toEqual({ at: T0 + 60_000, durable: true });
  });

  it("comes back after a failed listing write with a back-off from 3 s that never passes 5 s", () => {
    const plan = new RunPlan();
    const waits: number[] = [];
    for (let i = 0; i < 12; i++) {
      plan.listResult("running", false);
      const now = T0 + 10_000 * i;
      waits.push((plan.activeWake(facts({ next: now + 60_000 }), now, true)?.at ?? 0) - now);
    }
    expect(waits[0]).toBe(LISTING_RETRY_MS);
    expect(Math.max(...waits)).toBe(LISTING_RETRY_MAX_MS);
    // Once the shard answers, the run is listed well inside the 10 s the listing may lag.
    expect(LISTING_RETRY_MAX_MS).toBeLessThan(10_000);
  });

  it("tells a listing that showed the run queued or pending when its status changes, and nobody otherwise", () => {
    const plan = new RunPlan();
    expect(plan.statusChanged()).toEqual([]);
    plan.listResult("queued", true);
    expect(plan.statusChanged()).toEqual([{ type: "list" }]);
  });
});

describe("a finished run's listing entry", () => {
  it("is owed until its shard has written it: the guard armed at its end asks again then, without arming another", () => {
    const plan = new RunPlan();
    const f = facts({ status: "complete" });
    plan.armedAt(plan.endWake(T0));
    plan.listResult("complete", true, T0 + 8_000);
    expect(plan.listedAs("complete")).toBe(false);
    // The guard (T0 + LISTING_GUARD_MS) comes after the write: it serves.
    expect(plan.isArmed(plan.afterRunWake(f, T0 + 10))).toBe(true);
    plan.listResult("complete", true, null);
    expect(plan.listedAs("complete")).toBe(true);
    expect(plan.afterRunWake(f, T0 + LISTING_GUARD_MS)).toBeNull();
  });

  it("counts an active run's entry as listed once shown (its final write is the one made durable)", () => {
    const plan = new RunPlan();
    plan.listResult("running", true, T0 + 8_000);
    expect(plan.listedAs("running")).toBe(true);
  });
});

describe("a finished run", () => {
  it("arms one alarm LISTING_GUARD_MS away at its end, unless one due sooner is armed already", () => {
    const plan = new RunPlan();
    expect(plan.endWake(T0)).toEqual({ at: T0 + LISTING_GUARD_MS, durable: true });
    plan.armedAt({ at: T0 + 1_000, durable: true });
    expect(plan.endWake(T0)).toBeNull();
  });

  it("owes its log line once, its listing, its deliveries and its slot; then nothing, and its alarm goes", () => {
    const plan = new RunPlan();
    const f = facts({ status: "failed", delivers: true, gates: ["w\nk"] });
    const owed = plan.owedAfterRun(f, true);
    expect(owed.map((e) => e.type)).toEqual(["log", "list", "deliver", "release"]);
    expect(plan.owe(owed)).toBe(true);
    plan.listResult("failed", true);
    expect(plan.paidFor("list")).toBe(false);
    plan.releaseResult(true);
    expect(plan.paidFor("release")).toBe(false);
    plan.deliverResult(null);
    expect(plan.paidFor("deliver")).toBe(true);
    expect(plan.afterRunWake(f, T0)).toBeNull();
    expect(plan.owedAfterRun(f, false).map((e) => e.type)).toEqual(["deliver"]);
  });

  it("owes its judges after the answer, and comes back soon until they have answered", () => {
    const plan = new RunPlan();
    const f = facts({ status: "complete", judges: true });
    const owed = plan.owedAfterRun(f, false);
    expect(owed.map((e) => e.type)).toEqual(["list", "judge"]);
    plan.owe(owed);
    plan.listResult("complete", true);
    expect(plan.paidFor("list")).toBe(false);
    expect(plan.paidFor("judge")).toBe(true);
    // Still due (an eviction cut them short): a wake-up soon asks them again.
    expect(plan.afterRunWake(f, T0)).toEqual({ at: T0 + LISTING_RETRY_MS, durable: true });
    expect(plan.afterRunWake({ ...f, judges: false }, T0)).toBeNull();
  });

  it("keeps its alarm for the next delivery attempt, and comes back soon while the listing or the slot is owed", () => {
    const plan = new RunPlan();
    const f = facts({ status: "failed", delivers: true, gates: ["w\nk"] });
    plan.listResult("failed", true);
    plan.releaseResult(true);
    plan.deliverResult(T0 + 300_000);
    expect(plan.afterRunWake(f, T0)).toEqual({ at: T0 + 300_000, durable: true });
    const unlisted = new RunPlan();
    unlisted.deliverResult(T0 + 300_000);
    expect(unlisted.afterRunWake(f, T0)).toEqual({ at: T0 + LISTING_RETRY_MS, durable: true });
    const unreleased = new RunPlan();
    unreleased.listResult("failed", true);
    expect(unreleased.afterRunWake(facts({ status: "failed", gates: ["w\nk"] }), T0)?.at).toBe(
      T0 + LISTING_RETRY_MS,
    );
  });

  it("owes nothing to a listing that has its final status, and has no slot or notification to give", () => {
    const plan = new RunPlan();
    plan.listResult("complete", true);
    const f = facts({ status: "complete" });
    expect(plan.owe(plan.owedAfterRun(f, false))).toBe(false);
    expect(plan.afterRunWake(f, T0)).toBeNull();
  });
});

describe("arming", () => {
  it("knows the wake-up armed already, so the same one is not written twice", () => {
    const plan = new RunPlan();
    const w = { at: T0 + 5, durable: true };
    expect(plan.isArmed(w)).toBe(false);
    plan.armedAt(w);
    expect(plan.isArmed({ ...w })).toBe(true);
    plan.fired();
    expect(plan.isArmed(w)).toBe(false);
  });
});
