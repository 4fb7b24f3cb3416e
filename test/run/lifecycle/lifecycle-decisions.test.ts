/**
 * What the run lifecycle decides about storage and wake-ups (src/run/lifecycle/lifecycle.ts with
 * src/run/lifecycle/run-plan.ts), over the in-memory store with a shell that records what it is asked to
 * do: the first-write rule, the alarm a finished run keeps while it owes its listing, a queued
 * run's turn, retention. The Durable Object only performs these (test/worker covers it whole).
 */
import { describe, expect, it } from "vitest";
import {
  FIRST_WRITE_MS,
  HEARTBEAT_MS,
  LISTING_GUARD_MS,
  LISTING_RETRY_MS,
} from "../../../src/run/lifecycle/run-plan.ts";
import { never, setup, start } from "./lifecycle-harness.ts";

describe("the lifecycle's decisions", () => {
  it("writes a run that finishes before its answer once, at its end, and keeps one alarm only until it is listed", async () => {
    const { run, puts, reads, rec, clock } = setup(never);
    run.start(start(false));
    expect(puts).toEqual([]);
    // Before its first write, a timer stands in for the alarm.
    expect(rec.wakes).toEqual([{ at: clock.t + FIRST_WRITE_MS, durable: false }]);
    await run.ended();
    expect(puts).toEqual(["run"]);
    expect(rec.wakes.at(-1)).toEqual({ at: clock.t + LISTING_GUARD_MS, durable: true });
    expect(rec.effects).toEqual(["log", "list"]);
    // Its shard shows it, and writes it 8 s later: the guard stays for then, not armed again.
    const wakes = rec.wakes.length;
    run.reported({ type: "list", key: "complete", ok: true, durableAt: clock.t + 8_000 });
    expect(rec.wakes.length).toBe(wakes);
    clock.t += LISTING_GUARD_MS;
    run.alarm(clock.t);
    expect(rec.effects.at(-1)).toBe("list");
    run.reported({ type: "list", key: "complete", ok: true, durableAt: null });
    // Written: nothing is armed again (the guard fired; no alarm is left to delete).
    expect(rec.wakes.length).toBe(wakes);
    // It has no deliveries: it reads nothing for them (nor writes).
    expect(reads.filter((k) => k.startsWith("delivery") || k === "notify")).toEqual([]);
    expect(run.envelope().deliveries).toEqual([]);
  });

  it("writes a run still active when its answer leaves before that answer, and arms its alarm in the same turn", () => {
    const { run, puts, rec, clock } = setup(never);
    run.start(start(true));
    run.answering();
    expect(puts).toEqual(["def", "run"]);
    expect(rec.wakes.at(-1)).toEqual({ at: clock.t + FIRST_WRITE_MS, durable: true });
  });

  it("writes and lists a run still running FIRST_WRITE_MS after it started, at its timer's wake-up", () => {
    const { run, puts, rec, clock } = setup(never);
    run.start(start(true));
    clock.t += FIRST_WRITE_MS;
    run.alarm(clock.t);
    expect(puts).toEqual(["def", "run"]);
    expect(rec.effects).toEqual(["list"]);
    run.reported({ type: "list", key: "running", ok: true });
    // Listed: the alarm comes back for the heartbeat (the webhook is still working).
    expect(rec.wakes.at(-1)).toEqual({ at: clock.t + HEARTBEAT_MS, durable: true });
  });

  it("retries a failed listing write from the alarm, with its back-off", () => {
    const { run, rec, clock } = setup(never);
    run.start(start(true));
    run.answering();
    clock.t += FIRST_WRITE_MS;
    run.alarm(clock.t);
    run.reported({ type: "list", key: "running", ok: false });
    expect(rec.wakes.at(-1)).toEqual({ at: clock.t + LISTING_RETRY_MS, durable: true });
  });

  it("starts a queued run when its key gives it a turn, its timeout counted from then, and gives the key back at its end", async () => {
    const { run, rec, clock } = setup(async () => ({ status: 200 }));
    const gate = {
      name: "plan\n",
      settings: {
        throttle: null,
        debounce: null,
        batch: null,
        concurrency: { limit: 1, onFull: "queue" as const },
      },
      cancelOn: [],
    };
    const flow = {
      gates: [gate],
      at: 0,
      admitted: true,
      priority: 0,
      watches: [],
      reason: "concurrency" as const,
      startsAt: null,
    };
    run.start({ ...start(true), flow });
    expect(run.current?.status).toBe("queued");
    clock.t += 5_000;
    run.alarm(clock.t);
    expect(rec.effects).toEqual(["ask_turn", "list"]);
    run.reported({ type: "ask_turn", gate: gate.name, verdict: { outcome: "start" } });
    expect(run.current?.deadline).toBe(new Date(clock.t + 300_000).toISOString());
    await run.ended();
    expect(run.current?.status).toBe("complete");
    // The slot is owed back to the key after the run.
    expect(rec.effects).toContain("release");
  });

  it("passes its keys in order: a go from the first asks the next, a go from a key passed already changes nothing", () => {
    const { run, rec } = setup(never);
    const key = (name: string) => ({
      name,
      settings: { throttle: { limit: 1, periodMs: 1000 }, debounce: null, batch: null, concurrency: null },
      cancelOn: [],
    });
    const flow = {
      gates: [key("a"), key("b")],
      at: 0,
      admitted: true,
      priority: 0,
      watches: [],
      reason: null,
      startsAt: null,
    };
    run.start({ ...start(true), flow });
    expect(run.begin({ gate: "a" })).toBe(true);
    expect(run.current?.status).toBe("queued");
    expect(rec.effects.at(-1)).toBe("ask_turn");
    expect(run.begin({ gate: "a" })).toBe(true);
    expect(run.current?.status).toBe("queued");
    run.begin({ gate: "b", params: { call: true }, coalesced: 4 });
    expect(run.current?.status).not.toBe("queued");
    expect(run.envelope().coalesced).toBe(4);
  });

  it("writes a run that only passed a throttle like a plain run (once, at its end) and gives nothing back", async () => {
    const { run, puts, rec } = setup(never);
    const throttle = {
      name: "plan\n",
      settings: { throttle: { limit: 5, periodMs: 1000 }, debounce: null, batch: null, concurrency: null },
      cancelOn: [],
    };
    const flow = {
      gates: [throttle],
      at: 1,
      admitted: false,
      priority: 0,
      watches: [],
      reason: null,
      startsAt: null,
    };
    run.start({ ...start(false), flow });
    expect(puts).toEqual([]);
    await run.ended();
    expect(puts).toEqual(["run"]);
    expect(rec.effects).not.toContain("release");
  });

  it("writes a run that holds a concurrency slot at its start, so the slot is always given back", () => {
    const { run, puts } = setup(never);
    const slot = {
      name: "plan\n",
      settings: {
        throttle: null,
        debounce: null,
        batch: null,
        concurrency: { limit: 1, onFull: "queue" as const },
      },
      cancelOn: [],
    };
    const flow = {
      gates: [slot],
      at: 1,
      admitted: false,
      priority: 0,
      watches: [],
      reason: null,
      startsAt: null,
    };
    run.start({ ...start(true), flow });
    expect(puts).toEqual(["def", "run"]);
  });

  it("keeps a finished run until its retention has passed, then asks for its storage to go", async () => {
    const { run, rec, clock } = setup(never);
    run.start(start(false));
    await run.ended();
    const retention = 7 * 86_400_000;
    expect(run.expire(clock.t + 1_000)).toBe("kept");
    expect(rec.wakes.at(-1)).toEqual({ at: clock.t + retention, durable: true });
    expect(run.expired(clock.t + retention - 1)).toBe(false);
    expect(run.expire(clock.t + retention)).toBe("delete");
    run.alarm(clock.t + retention);
    expect(rec.effects.at(-1)).toBe("delete");
  });
});
