/**
 * The rules of one delivery (docs/triggers.md, "Deliveries"): a notification the Worker sends —
 * a `notify:` entry after a run ends, an approval request — with an id that is its `webhook-id`
 * on every attempt, a state, and its attempts. Pure over the clock and a random source, so the
 * whole 27-hour schedule is tested on a virtual clock (test/run/deliveries/delivery-rules.test.ts); the
 * sending is deliveries.ts.
 *
 * The schedule (Svix's): the first attempt at once, then waits of 5 s, 5 min, 30 min, 2 h, 5 h,
 * 10 h and 10 h, each ±10 % jitter; an entry's `retry.schedule_s` replaces it (the wait before
 * each attempt, the first one's included). A 2xx delivers; a 410 fails at once (the receiver said
 * stop); anything else is tried again on the schedule, a 429 or 503 with `Retry-After` no sooner
 * than it says (at most 24 h). After the last attempt the delivery has failed. A retry or a
 * recover grants one attempt more, now.
 */

export type DeliveryState = "pending" | "delivered" | "failed";

/** The default schedule, in seconds: the wait before each of the 8 attempts. */
export const DEFAULT_SCHEDULE_S: readonly number[] = [0, 5, 300, 1800, 7200, 18000, 36000, 36000];
/** Each wait is moved by up to this fraction either way. */
export const JITTER = 0.1;
/** A `Retry-After` further away than this is read as this. */
export const MAX_RETRY_AFTER_MS = 24 * 3600_000;
/** One attempt's time limit. */
export const ATTEMPT_TIMEOUT_MS = 15_000;

export interface DeliveryAttempt {
  at: string;
  status: number | null;
  error: string | null;
}

/** What is stored of a delivery once it has been attempted (nothing before: it follows from the run). */
export interface DeliveryRecord {
  id: string;
  state: DeliveryState;
  attempts: DeliveryAttempt[];
  /** Epoch ms of the next attempt while pending. */
  next: number | null;
  created_at: string;
  /** Attempts granted beyond the schedule (a retry, a recover). */
  extra: number;
}

/** How one attempt went. */
export interface AttemptOutcome {
  status: number | null;
  error: string | null;
  /** `Retry-After` of a 429 or 503, in ms from the attempt. */
  retryAfterMs: number | null;
}

/** A delivery not attempted yet: pending, due `schedule[0]` seconds after it was created. */
export function newDelivery(id: string, createdMs: number, schedule: readonly number[]): DeliveryRecord {
  return {
    id,
    state: "pending",
    attempts: [],
    next: createdMs + (schedule[0] ?? 0) * 1000,
    created_at: new Date(createdMs).toISOString(),
    extra: 0,
  };
}

/** `s` seconds moved by up to ±JITTER (`random` in [0, 1)). */
export function jittered(s: number, random: number): number {
  return s * 1000 * (1 - JITTER + 2 * JITTER * random);
}

/** The record after an attempt at `now` that went as `o`. */
export function afterAttempt(
  rec: DeliveryRecord,
  o: AttemptOutcome,
  now: number,
  schedule: readonly number[],
  random: number,
): DeliveryRecord {
  const attempts = [...rec.attempts, { at: new Date(now).toISOString(), status: o.status, error: o.error }];
  const done = (state: DeliveryState): DeliveryRecord => ({ ...rec, attempts, state, next: null });
  if (o.status !== null && o.status >= 200 && o.status < 300) return done("delivered");
  if (o.status === 410) return done("failed");
  // Attempts so far against what the schedule and the grants allow.
  const allowed = schedule.length + rec.extra;
  if (attempts.length >= allowed) return done("failed");
  const wait = attempts.length < schedule.length ? jittered(schedule[attempts.length] ?? 0, random) : 0;
  let next = now + wait;
  if ((o.status === 429 || o.status === 503) && o.retryAfterMs !== null)
    next = Math.max(next, now + Math.min(o.retryAfterMs, MAX_RETRY_AFTER_MS));
  return { ...rec, attempts, state: "pending", next };
}

/**
 * One attempt more, now, whatever the state (`POST /deliveries/{id}/retry`, and a recover of a
 * failed one): a delivered or failed delivery is pending again for exactly that attempt; a pending
 * one is tried now and keeps the rest of its schedule.
 */
export function grantAttempt(rec: DeliveryRecord, now: number, schedule: readonly number[]): DeliveryRecord {
  const extra = rec.state === "pending" ? rec.extra + 1 : rec.attempts.length + 1 - schedule.length;
  return { ...rec, state: "pending", next: now, extra };
}

/** Whether the delivery is due at `now`. */
export function isDue(rec: DeliveryRecord, now: number): boolean {
  return rec.state === "pending" && rec.next !== null && rec.next <= now;
}

/** One delivery a run makes, as it follows from the run. */
export interface DeliveryTarget {
  id: string;
  type: string;
  /** Where it goes (rendered: may hold a secret; shown masked). */
  url: string;
  /** The url holds a secret: the API, spans and errors show its origin only (`shownUrl`). */
  fromSecret: boolean;
  /** A Standard Webhooks secret (`whsec_…`) to sign with; "" when one is required and unset. */
  signSecret: string | null;
  schedule: readonly number[];
  createdMs: number;
  body(): string;
  /** An extra `idempotency-key` header (approval requests kept theirs). */
  idempotencyKey: string | null;
  /** A notification's index in `notify:` (null: an approval request). */
  entry: number | null;
  /**
   * An approval request whose approval was decided: it is not sent any more (a reviewer who has
   * decided needs no request), and one not delivered yet is listed `canceled`.
   */
  moot?: boolean;
  /** Headers of its own (an A2A push's token and credentials: a2a-push.ts). */
  headers?: Record<string, string>;
  /** The delivery that must be delivered or given up first (an A2A config's previous one); absent: none. */
  after?: string | null;
}
