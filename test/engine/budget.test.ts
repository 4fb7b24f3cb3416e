/**
 * The budget ledger: a run's `cost_budget_usd` is a hard cap, also when several LLM calls
 * reserve at the same time and when sub-workflows spend from the same run.
 */
import { getEventListeners } from "node:events";
import { describe, expect, it } from "vitest";
import { addUsd, createLedger, type LedgerState } from "../../src/engine/budget.ts";
import { StepError } from "../../src/engine/types.ts";

const never = new AbortController().signal;

/** Lets every queued promise callback run (the ledger wakes waiters synchronously on settle). */
const flush = () => new Promise<void>((r) => setTimeout(r, 0));

async function codeOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return "granted";
  } catch (e) {
    return e instanceof StepError ? e.code : String(e);
  }
}

describe("budget ledger", () => {
  it("grants a reservation that fits in the budget", async () => {
    const ledger = createLedger(1);
    const r = await ledger.reserve(0.4, never);
    r.settle(0.25);
    expect(ledger.spentUsd()).toBe(0.25);
  });

  it("refuses a reservation larger than the whole budget with budget_exceeded", async () => {
    const ledger = createLedger(0.01);
    await expect(ledger.reserve(0.02, never)).rejects.toMatchObject({ code: "budget_exceeded" });
  });

  it("says in the error how much the call needs and how much is left", async () => {
    const ledger = createLedger(0.5);
    (await ledger.reserve(0.2, never)).settle(0.2);
    await expect(ledger.reserve(0.4, never)).rejects.toThrow(
      "needs up to $0.4, $0.3 left of the $0.5 budget",
    );
  });

  it("never limits a ledger without a cap", async () => {
    const ledger = createLedger(null);
    (await ledger.reserve(1e9, never)).settle(1e9);
    expect(ledger.spentUsd()).toBe(1e9);
  });

  it("grants exactly three of five concurrent reservations when the budget holds three", async () => {
    const ledger = createLedger(3);
    const attempts = Array.from({ length: 5 }, () => ledger.reserve(1, never));
    const granted: Array<{ settle(n: number): void }> = [];
    const outcomes = attempts.map((p) =>
      p.then(
        (r) => {
          granted.push(r);
          return "granted";
        },
        (e: StepError) => e.code,
      ),
    );
    await flush();
    expect(granted).toHaveLength(3);
    for (const r of granted) r.settle(1);
    expect((await Promise.all(outcomes)).sort()).toEqual([
      "budget_exceeded",
      "budget_exceeded",
      "granted",
      "granted",
      "granted",
    ]);
    expect(ledger.spentUsd()).toBe(3);
  });

  it("keeps a reservation waiting while others are outstanding instead of failing it", async () => {
    const ledger = createLedger(1);
    const first = await ledger.reserve(1, never);
    let state = "waiting";
    ledger.reserve(0.5, never).then(
      () => {
        state = "granted";
      },
      () => {
        state = "failed";
      },
    );
    await flush();
    expect(state).toBe("waiting");
    first.settle(0.4);
    await flush();
    expect(state).toBe("granted");
  });

  it("fails a waiting reservation once the others settled at their worst case", async () => {
    const ledger = createLedger(1);
    const first = await ledger.reserve(1, never);
    const waiting = codeOf(ledger.reserve(0.5, never));
    first.settle(1);
    expect(await waiting).toBe("budget_exceeded");
  });

  it("leaves no listener on the run's signal once a reservation is granted or refused", async () => {
    const run = new AbortController();
    const ledger = createLedger(1);
    (await ledger.reserve(0.5, run.signal)).settle(0.5);
    await expect(ledger.reserve(2, run.signal)).rejects.toMatchObject({ code: "budget_exceeded" });
    expect(getEventListeners(run.signal, "abort")).toHaveLength(0);
  });

  it("stops waiting with the abort reason when the run is aborted", async () => {
    const ledger = createLedger(1);
    await ledger.reserve(1, never);
    const ac = new AbortController();
    const waiting = ledger.reserve(0.5, ac.signal);
    const reason = new Error("run canceled");
    ac.abort(reason);
    await expect(waiting).rejects.toBe(reason);
    const plain = new AbortController();
    plain.abort();
    await expect(ledger.reserve(0.5, plain.signal)).rejects.toMatchObject({ name: "AbortError" });
  });

  it("does not count a settled reservation twice", async () => {
    const ledger = createLedger(1);
    const r = await ledger.reserve(0.5, never);
    r.settle(0.3);
    r.settle(0.3);
    expect(ledger.spentUsd()).toBe(0.3);
  });

  it("accepts spending the budget to the last cent despite float rounding", async () => {
    const ledger = createLedger(0.3);
    (await ledger.reserve(0.1, never)).settle(0.1);
    (await ledger.reserve(0.2, never)).settle(0.2);
    expect(ledger.spentUsd()).toBeCloseTo(0.3, 12);
    await expect(ledger.reserve(0.01, never)).rejects.toMatchObject({ code: "budget_exceeded" });
  });

  it("reports spend without binary rounding noise (0.1 + 0.2 reads 0.3)", async () => {
    const ledger = createLedger(1);
    (await ledger.reserve(0.1, never)).settle(0.1);
    (await ledger.reserve(0.2, never)).settle(0.2);
    expect(ledger.spentUsd()).toBe(0.3);
    expect(addUsd(0.01, 0.01 + 1e-13)).toBe(0.02);
    expect(addUsd(0.000021, 0.000045)).toBe(0.000066);
  });

  it("reports every change as a JSON state the run can persist", async () => {
    const states: LedgerState[] = [];
    const ledger = createLedger(1, undefined, (s) => states.push(JSON.parse(JSON.stringify(s))));
    const r = await ledger.reserve(0.5, never);
    r.settle(0.2);
    expect(states).toEqual([
      { spent: 0, outstanding: { r1: 0.5 } },
      { spent: 0.2, outstanding: {} },
    ]);
  });

  it("charges reservations that were in flight at eviction at their worst case when restored", async () => {
    const ledger = createLedger(1, { spent: 0.2, outstanding: { r7: 0.5 } });
    expect(ledger.spentUsd()).toBe(0.7);
    await expect(ledger.reserve(0.4, never)).rejects.toMatchObject({ code: "budget_exceeded" });
  });
});

describe("child ledger (sub-workflow)", () => {
  it("is capped by its own budget when that is smaller than the parent's remainder", async () => {
    const parent = createLedger(1);
    const child = parent.child(0.2);
    expect(child.capUsd).toBe(0.2);
    await expect(child.reserve(0.3, never)).rejects.toMatchObject({ code: "budget_exceeded" });
  });

  it("is capped by the parent's remainder when that is smaller than its own budget", async () => {
    const parent = createLedger(1);
    (await parent.reserve(0.9, never)).settle(0.9);
    expect(parent.child(0.5).capUsd).toBeCloseTo(0.1, 12);
  });

  it("charges what the child spends to the parent", async () => {
    const parent = createLedger(1);
    const child = parent.child(null);
    (await child.reserve(0.5, never)).settle(0.3);
    expect(parent.spentUsd()).toBe(0.3);
    expect(child.spentUsd()).toBe(0.3);
  });

  it("does not let two concurrent children together overspend the parent", async () => {
    const parent = createLedger(1);
    const a = parent.child(null);
    const b = parent.child(null);
    const ra = await a.reserve(0.8, never);
    const fromB = codeOf(b.reserve(0.8, never));
    await flush();
    ra.settle(0.8);
    expect(await fromB).toBe("budget_exceeded");
    expect(parent.spentUsd()).toBe(0.8);
  });

  it("lets a waiting child reservation through once a sibling settles lower", async () => {
    const parent = createLedger(1);
    const a = parent.child(null);
    const b = parent.child(null);
    const ra = await a.reserve(0.8, never);
    const fromB = codeOf(b.reserve(0.5, never));
    await flush();
    ra.settle(0.1);
    expect(await fromB).toBe("granted");
  });

  it("keeps a sub-workflow's cap and spend across a resume when the child is keyed", async () => {
    let saved: LedgerState | null = null;
    const before = createLedger(1, undefined, (s) => {
      saved = JSON.parse(JSON.stringify(s));
    });
    (await before.child(0.1, "notify").reserve(0.08, never)).settle(0.08);

    const resumed = createLedger(1, saved);
    const child = resumed.child(0.1, "notify");
    expect(child.spentUsd()).toBe(0.08);
    await expect(child.reserve(0.05, never)).rejects.toMatchObject({ code: "budget_exceeded" });
  });

  it("gives an unkeyed child a fresh ledger on every call", async () => {
    const parent = createLedger(1);
    (await parent.child(0.1).reserve(0.08, never)).settle(0.08);
    expect(parent.child(0.1).spentUsd()).toBe(0);
  });

  it("persists a keyed child's spend under its key, and an unkeyed child's nowhere", async () => {
    const states: LedgerState[] = [];
    const root = createLedger(1, undefined, (s) => states.push(JSON.parse(JSON.stringify(s))));
    (await root.child(0.5).reserve(0.1, never)).settle(0.1);
    expect(states.every((s) => s.children === undefined)).toBe(true);
    (await root.child(0.5, "notify").reserve(0.2, never)).settle(0.15);
    expect(states.at(-1)?.children).toEqual({ notify: { cap: 0.5, spent: 0.15, outstanding: {} } });
    expect(states.at(-1)?.spent).toBe(0.25);
  });

  it("keeps persisting a restored keyed child under its key", async () => {
    let saved: LedgerState | null = null;
    const before = createLedger(1, undefined, (s) => {
      saved = JSON.parse(JSON.stringify(s));
    });
    (await before.child(0.5, "notify").reserve(0.1, never)).settle(0.1);
    let after: LedgerState | null = null;
    const resumed = createLedger(1, saved, (s) => {
      after = JSON.parse(JSON.stringify(s));
    });
    (await resumed.child(0.5, "notify").reserve(0.1, never)).settle(0.05);
    expect((after as LedgerState | null)?.children?.notify).toEqual({
      cap: 0.5,
      spent: 0.15,
      outstanding: {},
    });
  });

  it("gives back a child's reservation that its parent refused, and saves it given back", async () => {
    const states: LedgerState[] = [];
    const parent = createLedger(1, undefined, (s) => states.push(JSON.parse(JSON.stringify(s))));
    const child = parent.child(1, "notify");
    // The child has room; the parent has too until a sibling's call settles at its worst case.
    const sibling = await parent.reserve(0.8, never);
    const refused = codeOf(child.reserve(0.5, never));
    await flush();
    sibling.settle(0.8);
    expect(await refused).toBe("budget_exceeded");
    expect(child.snapshot().outstanding).toEqual({});
    expect(states.at(-1)?.children?.notify?.outstanding).toEqual({});
    (await child.reserve(0.2, never)).settle(0.2);
    expect(parent.spentUsd()).toBe(1);
  });

  it("refuses a child's reservation over its own cap without asking its parent", async () => {
    const parent = createLedger(0.5);
    const child = parent.child(1);
    await expect(child.reserve(0.6, never)).rejects.toMatchObject({ code: "budget_exceeded" });
    expect(child.snapshot().outstanding).toEqual({});
    (await child.reserve(0.4, never)).settle(0.4);
    expect(parent.spentUsd()).toBe(0.4);
  });

  it("caps a child at what its parent has left, outstanding reservations counted", async () => {
    const parent = createLedger(1);
    (await parent.reserve(0.2, never)).settle(0.2);
    await parent.reserve(0.3, never);
    expect(parent.child(null).capUsd).toBeCloseTo(0.5, 12);
    expect(parent.child(0.4).capUsd).toBe(0.4);
    const uncapped = createLedger(null);
    expect(uncapped.child(0.4).capUsd).toBe(0.4);
    expect(uncapped.child(null).capUsd).toBeNull();
  });
});
