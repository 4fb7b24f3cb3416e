/**
 * A run's deliveries (src/run/deliveries/deliveries.ts) over the memory store, a manual clock and a receiver
 * that records what it gets: the whole default schedule against a receiver that is down, every
 * attempt with the same webhook-id and a signature the `standardwebhooks` package accepts, one
 * row per attempt (one in all for a delivery that gets through at once), and what a recover does
 * when asked twice.
 */
import { Webhook } from "standardwebhooks";
import { describe, expect, it, vi } from "vitest";
import { type DeliveryTarget, RunDeliveries } from "../../../src/run/deliveries/deliveries.ts";
import { DEFAULT_SCHEDULE_S } from "../../../src/run/deliveries/delivery-rules.ts";
import { memoryKv } from "../../../src/run/memory-kv.ts";
import { RunStore } from "../../../src/run/run-store.ts";

const SECRET = `whsec_${btoa("delivery-test-signing-key")}`;
const T0 = Date.parse("2026-11-25T12:00:00Z");

function setup(status: (n: number) => number) {
  const inner = memoryKv();
  const puts: string[] = [];
  const store = new RunStore({
    ...inner,
    put: (k, v) => {
      puts.push(k);
      inner.put(k, v);
    },
  });
  const clock = { t: T0 };
  const got: Array<{ at: number; headers: Record<string, string>; body: string }> = [];
  const deliveries = new RunDeliveries({
    store,
    now: () => clock.t,
    random: () => 0.5,
    allowPrivate: false,
    fetch: async (_url, init) => {
      got.push({ at: clock.t, headers: init.headers as Record<string, string>, body: String(init.body) });
      return new Response(null, { status: status(got.length) });
    },
  });
  const target: DeliveryTarget = {
    id: `msg_${"a".repeat(64)}_run.failed`,
    type: "run.failed",
    url: "https://receiver.example/hook",
    fromSecret: false,
    signSecret: SECRET,
    schedule: DEFAULT_SCHEDULE_S,
    createdMs: T0,
    body: () => JSON.stringify({ type: "run.failed", run_id: "a".repeat(64) }),
    idempotencyKey: null,
    entry: 0,
  };
  return { deliveries, target, got, clock, puts, store };
}

describe("a run's deliveries", () => {
  it("tries a receiver that is down 8 times over about 27 hours, each attempt signed with the same webhook-id, then fails", async () => {
    const { deliveries, target, got, clock, puts } = setup(() => 503);
    for (;;) {
      const next = deliveries.nextAttempt([target]);
      if (next === null) break;
      clock.t = next;
      await deliveries.pass([target]);
    }
    expect(got).toHaveLength(8);
    expect(new Set(got.map((g) => g.headers["webhook-id"]))).toEqual(new Set([target.id]));
    // Each verifies as its receiver would have, at the time it came (the verifier reads the clock).
    vi.useFakeTimers({ toFake: ["Date"] });
    try {
      for (const g of got) {
        vi.setSystemTime(g.at);
        expect(new Webhook(SECRET).verify(g.body, g.headers)).toEqual(JSON.parse(g.body));
      }
    } finally {
      vi.useRealTimers();
    }
    expect(((got[7]?.at ?? 0) - T0) / 3600_000).toBeCloseTo(27.58, 1);
    const [rec] = deliveries.records([target]);
    expect(rec?.state).toBe("failed");
    // One row per attempt, the delivery's own.
    expect(puts).toEqual(Array(8).fill(`delivery/${target.id}`));
  });

  it("writes one row in all for a delivery that gets through at the first attempt", async () => {
    const { deliveries, target, puts } = setup(() => 200);
    await deliveries.pass([target]);
    expect(deliveries.records([target])[0]?.state).toBe("delivered");
    expect(puts).toHaveLength(1);
    expect(deliveries.nextAttempt([target])).toBeNull();
  });

  it("keeps what it attempted across a new incarnation (an eviction), and goes on from there", async () => {
    const { deliveries, target, clock, store } = setup(() => 500);
    await deliveries.pass([target]);
    const fresh = new RunDeliveries({
      store,
      now: () => clock.t,
      random: () => 0.5,
      allowPrivate: false,
      fetch: async () => new Response(null, { status: 200 }),
    });
    expect(fresh.records([target])[0]?.attempts).toHaveLength(1);
    expect(fresh.nextAttempt([target])).toBe(T0 + 5000);
  });

  it("never sends a delivery that should be signed when its secret is unset", async () => {
    const { deliveries, target, got } = setup(() => 200);
    await deliveries.pass([{ ...target, signSecret: "" }]);
    expect(got).toEqual([]);
    expect(deliveries.records([target])[0]?.attempts[0]?.error).toBe("signing_secret_unset");
  });

  it("recovers a failed delivery once: a second recover finds it pending and counts nothing", async () => {
    const { deliveries, target, clock } = setup(() => 410);
    await deliveries.pass([target]);
    expect(deliveries.records([target])[0]?.state).toBe("failed");
    clock.t += 60_000;
    expect(deliveries.recover(T0, [target])).toBe(1);
    expect(deliveries.recover(T0, [target])).toBe(0);
    // Created before `since`: not recovered.
    expect(deliveries.recover(T0 + 1, [target])).toBe(0);
  });
});
