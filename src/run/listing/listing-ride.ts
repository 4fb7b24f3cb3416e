/**
 * Listing entries that ride to their shard together (docs/operations.md, "Entries ride to their
 * shard together"): a busy isolate's finished runs hand their entries to one carrier (`handOver`,
 * run objects), and a busy Worker's carried entries the same way (`keepListed`, for runs that ended
 * before their answer).
 */

import {
  answered,
  entryKey,
  type IndexRow,
  type ListedRun,
  type ListingTicket,
  recordRun,
  rowOf,
  shardKey,
  shardStub,
} from "./listing.ts";
import { flushWindowMs, placeRun, rideWindowMs, type ShardRef } from "./listing-layout.ts";

/**
 * **Entries ride together.** Under load (RIDE_BUSY finished runs of this isolate handed their
 * entries over within the last second), a finished run whose guard alarm is armed does not send its
 * entry itself: it leaves it for one run of the isolate, the carrier, which collects entries for
 * rideWindowMs (or until no run has finished for RIDE_QUIET_MS: a burst's last entries are not held
 * back) and sends each shard its share in one write. A shard then hears from a busy isolate once
 * per window instead of once per run. The entry is listed when it arrives (at most a window
 * later); the run is told when its shard will have written it, and its guard alarm (LISTING_GUARD_MS,
 * run-plan.ts) asks the shard then, unless the carrier's answer and a later one say the batch is
 * written. A carrier that never sends (its object reset) costs a rider nothing but time: its guard
 * sends the entry itself. Only plain data crosses between runs: each carrier uses its own stub.
 */
/**
 * What rides, per listing binding: a request or object whose env names another binding (the
 * bench's variant with the listing switched off) never carries this one's entries.
 */
interface Rides {
  /** Entries of finished runs' objects (`handOver`). */
  riding: Lane;
  /** Entries the Worker carries for runs that ended before their answer (`keepListed`). */
  carried: Lane;
}
/** Entries waiting for one carrier, by shard, and when that carrier sends (null: none is collecting). */
interface Lane {
  shares: Map<string, Share>;
  due: number | null;
}
type Share = { ref: ShardRef; rows: Map<string, IndexRow> };
const ridesByBinding = new WeakMap<object, Rides>();

function ridesOf(env: Env): Rides {
  const binding = env.RUN_INDEX as unknown as object;
  let rides = ridesByBinding.get(binding);
  if (!rides) {
    rides = { riding: { shares: new Map(), due: null }, carried: { shares: new Map(), due: null } };
    ridesByBinding.set(binding, rides);
  }
  return rides;
}
/** The latest hand-overs (times), to tell a busy isolate. */
const handedAt: number[] = [];
const RIDE_BUSY = 10;
/** A carrier leaves early once no run has handed an entry over for this long (a burst has ended). */
const RIDE_QUIET_MS = 100;
/** A carrier this late has lost its context (its object was reset): the next run carries. */
const CARRIER_LOST_MS = 5_000;
/** The ticket of each entry a carrier sent, until its run asks (bounded: the oldest go first). */
const rode = new Map<string, ListingTicket>();
const RODE_MAX = 20_000;

/** The ticket of the batch a carrier's write put the run's entry in (null: none heard of). */
export function rodeTicket(run: ListedRun): ListingTicket | null {
  return rode.get(entryKey(rowOf(run))) ?? null;
}

/**
 * A finished run whose guard alarm is armed hands its entry over: under load it rides with other
 * runs' (above), else it is written at once (`recordRun`). Resolves with when it will be durable.
 */
export async function handOver(
  env: Env,
  run: ListedRun,
): Promise<{ durableAt: number | null; ticket: ListingTicket | null }> {
  const now = Date.now();
  const window = rideWindowMs(env);
  if (!handedOverBusy(now) || window === 0) return recordRun(env, run);
  const row = rowOf(run);
  const ref = placeRun(run.workflow, run.run_id, row.created_ms);
  const shard = shardKey(ref);
  const lane = ridesOf(env).riding;
  const carrying = lane.due;
  const shares = await ride(lane, ref, row, now, window);
  // Another run carries it: listed when that carrier's batch is written.
  if (shares === null) return { durableAt: (carrying as number) + flushWindowMs(env), ticket: null };
  const answers = await Promise.allSettled(
    shares.map((s) => shardStub(env, s.ref).record(s.ref, [...s.rows.values()])),
  );
  let own: { durableAt: number | null; ticket: ListingTicket | null } | null = null;
  for (const [i, a] of answers.entries()) {
    const s = shares[i];
    if (a.status !== "fulfilled" || !s) continue;
    const key = shardKey(s.ref);
    const told = answered(key, a.value);
    // Written already: the ticket of a batch this incarnation has written.
    const ticket = told.ticket ?? { shard: key, epoch: a.value.epoch, batch: a.value.written };
    for (const k of s.rows.keys()) {
      rode.delete(k);
      rode.set(k, ticket);
    }
    if (key === shard) own = told;
  }
  while (rode.size > RODE_MAX) rode.delete(rode.keys().next().value as string);
  if (own === null) throw new Error("the run's listing shard did not answer");
  return own;
}

/**
 * Puts `row` in `lane`. When a carrier collects already (and is not lost), that is all: null. Else
 * this call carries: it collects until the window ends or entries stop coming, then takes every
 * share of the lane to send.
 */
async function ride(
  lane: Lane,
  ref: ShardRef,
  row: IndexRow,
  now: number,
  window: number,
): Promise<Share[] | null> {
  const key = shardKey(ref);
  const share = lane.shares.get(key) ?? { ref, rows: new Map<string, IndexRow>() };
  share.rows.set(entryKey(row), row);
  lane.shares.set(key, share);
  if (lane.due !== null && now < lane.due + CARRIER_LOST_MS) return null;
  const due = now + window;
  lane.due = due;
  await untilDueOrQuiet(due);
  const shares = [...lane.shares.values()];
  lane.shares.clear();
  lane.due = null;
  return shares;
}

/** Records a hand-over at `now`: whether the isolate is busy (RIDE_BUSY of them within a second). */
function handedOverBusy(now: number): boolean {
  handedAt.push(now);
  if (handedAt.length > RIDE_BUSY) handedAt.shift();
  return handedAt.length === RIDE_BUSY && now - (handedAt[0] as number) < 1_000;
}

/** Until `due`, or until no entry has been handed over for RIDE_QUIET_MS (a burst has ended). */
async function untilDueOrQuiet(due: number): Promise<void> {
  for (;;) {
    const wait = Math.min(RIDE_QUIET_MS, due - Date.now());
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    const t = Date.now();
    if (t >= due || t - (handedAt[handedAt.length - 1] as number) >= RIDE_QUIET_MS) return;
  }
}

/** Tries of `keepListed`: each waits at most a flush window, all within a `waitUntil`'s 30 s. */
const KEEP_TRIES = 3;

/**
 * The entry of a run that ended before its answer (an express run, or any run owing nothing else:
 * docs/operations.md, "Express runs"), carried by the Worker that answered the run, in its
 * `waitUntil`: the shard answers once a written row holds the entry, and a reset of the shard
 * before that (a deploy, a crash) fails the call, so the entry goes to its next incarnation. The
 * run's object sends nothing and waits for nothing (it would be billed the seconds); the Worker's
 * wait is billed no CPU time. When the isolate is busy the Worker's entries ride together as the
 * objects' do (`handOver`): one request, the carrier, collects them for a window (or until they
 * stop coming) and sends each shard its share in one write, waiting until it is written; the
 * others hand over plain data and return (no request waits on another's promise). A carrier whose
 * request ended before it sent costs its riders time: the next carried entry after
 * CARRIER_LOST_MS sends what was left.
 */
export async function keepListed(env: Env, run: ListedRun): Promise<void> {
  const row = rowOf(run);
  const ref = placeRun(run.workflow, run.run_id, row.created_ms);
  const now = Date.now();
  const window = rideWindowMs(env);
  if (!handedOverBusy(now) || window === 0) return keepWritten(env, ref, [row]);
  const shares = await ride(ridesOf(env).carried, ref, row, now, window);
  if (shares === null) return;
  const sent = await Promise.allSettled(shares.map((s) => keepWritten(env, s.ref, [...s.rows.values()])));
  if (sent.some((r) => r.status === "rejected")) throw new Error("a listing shard did not take its entries");
}

/** `rows` to their shard, answered once written; a shard reset meanwhile: sent to its next incarnation. */
async function keepWritten(env: Env, ref: ShardRef, rows: IndexRow[]): Promise<void> {
  for (let tried = 1; ; tried++) {
    try {
      return await shardStub(env, ref).recordWritten(ref, rows);
    } catch (e) {
      if (tried >= KEEP_TRIES) throw e;
    }
  }
}
