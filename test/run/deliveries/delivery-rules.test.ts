/**
 * The rules of one delivery (src/run/deliveries/delivery-rules.ts) on a virtual clock: the default schedule of
 * 8 attempts over about 27 hours with ±10 % jitter, what delivers and what stops, Retry-After, a
 * schedule of the entry's own, and the one attempt more that a retry or a recover grants.
 */
import { describe, expect, it } from "vitest";
import {
  type AttemptOutcome,
  afterAttempt,
  DEFAULT_SCHEDULE_S,
  type DeliveryRecord,
  grantAttempt,
  isDue,
  newDelivery,
} from "../../../src/run/deliveries/delivery-rules.ts";

const T0 = Date.parse("2026-11-25T12:00:00Z");
const refused = (status: number | null, retryAfterMs: number | null = null): AttemptOutcome => ({
  status,
  error: status === null ? "network: connection refused" : `http_${status}`,
  retryAfterMs,
});
const ok: AttemptOutcome = { status: 200, error: null, retryAfterMs: null };

/** Attempts a delivery whenever it is due until it settles; the times of its attempts. */
function drive(
  rec: DeliveryRecord,
  answer: (n: number) => AttemptOutcome,
  schedule: readonly number[] = DEFAULT_SCHEDULE_S,
  random: () => number = Math.random,
): { rec: DeliveryRecord; times: number[] } {
  const times: number[] = [];
  let r = rec;
  while (r.state === "pending" && r.next !== null && times.length < 50) {
    const now = r.next;
    expect(isDue(r, now - 1)).toBe(false);
    expect(isDue(r, now)).toBe(true);
    times.push(now);
    r = afterAttempt(r, answer(times.length), now, schedule, random());
  }
  return { rec: r, times };
}

describe("the default schedule", () => {
  it("makes 8 attempts over about 27 hours, each wait within ±10 % of Svix's, then fails", () => {
    const { rec, times } = drive(newDelivery("msg_x", T0, DEFAULT_SCHEDULE_S), () => refused(503));
    expect(times).toHaveLength(8);
    expect(times[0]).toBe(T0);
    const waits = times.slice(1).map((t, i) => (t - (times[i] as number)) / 1000);
    const nominal = [5, 300, 1800, 7200, 18000, 36000, 36000];
    waits.forEach((w, i) => {
      expect(w).toBeGreaterThanOrEqual((nominal[i] as number) * 0.9);
      expect(w).toBeLessThanOrEqual((nominal[i] as number) * 1.1);
    });
    const hours = ((times[7] as number) - T0) / 3600_000;
    expect(hours).toBeGreaterThan(24);
    expect(hours).toBeLessThan(30);
    expect(rec.state).toBe("failed");
    expect(rec.next).toBeNull();
    expect(rec.attempts.map((a) => a.status)).toEqual(Array(8).fill(503));
  });

  it("spreads the waits of many deliveries over the whole ±10 % (jitter), not one instant", () => {
    const firstWaits = [0, 0.25, 0.5, 0.75, 0.999].map(
      (r) =>
        (afterAttempt(newDelivery("m", T0, DEFAULT_SCHEDULE_S), refused(500), T0, DEFAULT_SCHEDULE_S, r)
          .next ?? 0) - T0,
    );
    expect(firstWaits[0]).toBe(4500);
    expect(firstWaits[2]).toBe(5000);
    expect(firstWaits[4]).toBeCloseTo(5499, 0);
  });

  it("delivers on any 2xx, and stops at once on a 410 (the receiver said stop)", () => {
    const delivered = drive(newDelivery("m", T0, DEFAULT_SCHEDULE_S), (n) =>
      n < 3 ? refused(null) : { ...ok, status: 204 },
    );
    expect(delivered.rec.state).toBe("delivered");
    expect(delivered.times).toHaveLength(3);
    const gone = drive(newDelivery("m", T0, DEFAULT_SCHEDULE_S), (n) =>
      n < 2 ? refused(500) : refused(410),
    );
    expect(gone.rec.state).toBe("failed");
    expect(gone.times).toHaveLength(2);
  });

  it("waits at least a 429's or 503's Retry-After, at most 24 hours, and ignores it on other statuses", () => {
    const r = newDelivery("m", T0, DEFAULT_SCHEDULE_S);
    expect(afterAttempt(r, refused(429, 600_000), T0, DEFAULT_SCHEDULE_S, 0.5).next).toBe(T0 + 600_000);
    expect(afterAttempt(r, refused(503, 90 * 86400_000), T0, DEFAULT_SCHEDULE_S, 0.5).next).toBe(
      T0 + 86400_000,
    );
    // Sooner than the schedule: the schedule's wait stands.
    expect(afterAttempt(r, refused(503, 1000), T0, DEFAULT_SCHEDULE_S, 0.5).next).toBe(T0 + 5000);
    expect(afterAttempt(r, refused(500, 600_000), T0, DEFAULT_SCHEDULE_S, 0.5).next).toBe(T0 + 5000);
  });
});

describe("an entry's own schedule", () => {
  it("is the wait before each attempt, the first one's included", () => {
    const schedule = [60, 10, 10];
    const { rec, times } = drive(
      newDelivery("m", T0, schedule),
      () => refused(500),
      schedule,
      () => 0.5,
    );
    expect(times).toEqual([T0 + 60_000, T0 + 70_000, T0 + 80_000]);
    expect(rec.state).toBe("failed");
  });
});

describe("one attempt more (a retry, a recover)", () => {
  it("gives a failed delivery exactly one attempt, now, and it fails again if that one fails", () => {
    const failed = drive(newDelivery("m", T0, DEFAULT_SCHEDULE_S), () => refused(500)).rec;
    const now = T0 + 40 * 3600_000;
    const granted = grantAttempt(failed, now, DEFAULT_SCHEDULE_S);
    expect(granted.state).toBe("pending");
    expect(isDue(granted, now)).toBe(true);
    const again = afterAttempt(granted, refused(500), now, DEFAULT_SCHEDULE_S, 0.5);
    expect(again.state).toBe("failed");
    expect(again.attempts).toHaveLength(9);
  });

  it("gives a delivered one exactly one attempt too, and a 410-stopped one", () => {
    const delivered = drive(newDelivery("m", T0, DEFAULT_SCHEDULE_S), () => ok).rec;
    const again = afterAttempt(
      grantAttempt(delivered, T0 + 1, DEFAULT_SCHEDULE_S),
      refused(500),
      T0 + 1,
      DEFAULT_SCHEDULE_S,
      0.5,
    );
    expect(again.state).toBe("failed");
    const stopped = drive(newDelivery("m", T0, DEFAULT_SCHEDULE_S), () => refused(410)).rec;
    const retried = afterAttempt(
      grantAttempt(stopped, T0 + 1, DEFAULT_SCHEDULE_S),
      ok,
      T0 + 1,
      DEFAULT_SCHEDULE_S,
      0.5,
    );
    expect(retried.state).toBe("delivered");
  });

  it("tries a pending delivery now and keeps the rest of its schedule", () => {
    const first = afterAttempt(
      newDelivery("m", T0, DEFAULT_SCHEDULE_S),
      refused(500),
      T0,
      DEFAULT_SCHEDULE_S,
      0.5,
    );
    const granted = grantAttempt(first, T0 + 1000, DEFAULT_SCHEDULE_S);
    const { times, rec } = drive(
      granted,
      () => refused(500),
      DEFAULT_SCHEDULE_S,
      () => 0.5,
    );
    // The granted attempt, then the 7 the schedule still had.
    expect(times).toHaveLength(8);
    expect(times[0]).toBe(T0 + 1000);
    expect(rec.attempts).toHaveLength(9);
  });
});
