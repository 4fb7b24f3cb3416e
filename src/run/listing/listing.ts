/**
 * The run listing behind `GET /runs?workflow=NAME` (docs/http-api.md), as one small interface:
 * `recordRun` (the run object reports its own status, after it has answered), `listRuns` (merge on
 * read, newest first, from a position) and `forgetRun` (DELETE). Nothing on the invoke path calls
 * it: an invoke contacts only its run's own Durable Object.
 *
 * Where entries live, and why (the arithmetic is in docs/operations.md, "The run listing"): one
 * workflow's runs are spread over SHARDS_PER_BUCKET RunIndex objects per hour of creation time,
 * the shard chosen by a hash of the run id, so that 10,000 invokes a second of one workflow stay
 * far below one object's request and storage limits. A per-workflow directory object (named by
 * the workflow) records which (hour, shard) objects exist, so a read visits only shards that hold
 * runs, newest hour first, and at most MAX_SHARD_READS of them per request.
 *
 * An entry is keyed by (created_ms, run_id): it never moves, so paging by that position lists a
 * run once, whatever its status does meanwhile. Retention hides an entry the moment its run's
 * storage is deleted (finished + RUN_RETENTION_S); a shard deletes itself when the last run it
 * can hold has expired.
 */

import type { Residency } from "../../bundle.ts";
import type { RunStatus } from "../../engine/types.ts";
import { namedStub } from "../jurisdiction.ts";
import type { ListedScores } from "./listing-layout.ts";
import {
  BUCKET_MS,
  flushWindowMs,
  MAX_SHARD_READS,
  placeRun,
  retentionMs,
  rideWindowMs,
  type ShardRef,
} from "./listing-layout.ts";

/** What the listing shows of a run (the shape of `GET /runs` items). */
export interface ListedRun {
  run_id: string;
  workflow: string;
  status: RunStatus;
  created_at: string;
  finished_at: string | null;
  /** How many deliveries the run has and how many failed (absent: none); not shown by `GET /runs`. */
  deliveries?: { total: number; failed: number };
  /** Its compensation phase's status (docs/file-format.md, "Compensation"); null: nothing to undo. */
  compensation?: CompensationStatus | null;
  /** Its search values (docs/http-api.md, "Search keys"); absent: its workflow declares none. */
  search?: Record<string, string>;
  /** Its scores (docs/file-format.md, "Scores"), with its workflow's version; absent: none. */
  scores?: ListedScores;
}

export type { ListedScores } from "./listing-layout.ts";

export type CompensationStatus = "running" | "complete" | "failed";

/** A place in the newest-first order: entries strictly older than (t, id) come after it. */
export interface Position {
  t: number;
  id: string;
}

export interface ListQuery {
  workflow: string;
  /** The workflow's jurisdiction: where its listing objects are (jurisdiction.ts). */
  residency: Residency | null;
  status: RunStatus | null;
  limit: number;
  /** Continue after this position (from a cursor); null for the newest runs. */
  after: Position | null;
  /**
   * Only runs that have deliveries (`any`), or failed ones (`failed`), or whose compensation
   * failed (`compensation_failed`); null: every run.
   */
  deliveries?: EntryFilter;
  /** Only runs with these search values (each key equal); null or absent: every run. */
  search?: Record<string, string> | null;
}

/** Which runs a read of the listing is about, by their deliveries or their compensation. */
export type EntryFilter = "any" | "failed" | "compensation_failed" | null;

export interface ListPage {
  runs: ListedRun[];
  /** Where the next page starts, or null when there is none. */
  next: Position | null;
}

/** One entry as a shard stores it. */
export interface IndexRow {
  run_id: string;
  created_ms: number;
  status: RunStatus;
  finished_ms: number | null;
  /** The run's deliveries, and how many of them failed (0 and 0: none). */
  deliveries?: number;
  failed_deliveries?: number;
  /** Its compensation phase's status; absent or null: nothing to undo. */
  compensation?: CompensationStatus | null;
  /** Its search values; absent: none. */
  search?: Record<string, string>;
  /** Its scores; absent: none. */
  scores?: ListedScores;
}

/** What a shard answers a write: durable now, or by `durableAt` (ask again then). */
export interface RecordAnswer {
  durableAt: number | null;
  /** This incarnation of the shard (a new one has lost what the old one had not written). */
  epoch: string;
  /** The batch (1, 2, …, in this incarnation) the entries wait in, when `durableAt` is not null. */
  batch: number;
  /** How many batches this incarnation has written (each answer is sent after their commit). */
  written: number;
}

/** An entry's identity: a run id reused (DELETE, then the same Idempotency-Key) is another entry. */
export const entryKey = (r: IndexRow): string => `${r.created_ms}/${r.run_id}`;

/** The RPC surface of RunIndex objects (typed plainly: the generated stub types are too deep). */
export interface ShardRpc {
  /** Takes the entries: durable now (`durableAt` null) or by `durableAt` (ask again, `confirm`, then). */
  record(ref: ShardRef, rows: IndexRow[], confirm?: boolean): Promise<RecordAnswer>;
  /** Takes the entries and answers once they are written (fails if the shard is reset first). */
  recordWritten(ref: ShardRef, rows: IndexRow[]): Promise<void>;
  forget(ref: ShardRef, row: IndexRow): Promise<void>;
  page(
    after: Position | null,
    status: RunStatus | null,
    limit: number,
    finishedAfter: number,
    deliveries?: EntryFilter,
    search?: Record<string, string> | null,
  ): Promise<IndexRow[]>;
}
export interface DirectoryRpc {
  register(bucket: number, shard: number, expiresMs: number): Promise<void>;
  shards(maxBucket: number, now: number): Promise<Array<{ bucket: number; shard: number }>>;
}

/** A shard's object name; workflow names never contain a newline, so none is a directory's. */
function shardName(ref: ShardRef): string {
  return `${ref.workflow}\n${ref.bucket}\n${ref.shard}`;
}

/** A shard as this isolate's maps know it: its jurisdiction and its name. */
function shardKey(ref: ShardRef): string {
  return `${ref.residency ?? ""}\n${shardName(ref)}`;
}

/** A shard, in its runs' jurisdiction. */
function shardStub(env: Env, ref: ShardRef): ShardRpc {
  return namedStub(env.RUN_INDEX, ref.residency ?? null, shardName(ref));
}

/** The workflow's directory of shards, in its runs' jurisdiction. */
export function directoryStub(env: Env, workflow: string, residency: Residency | null): DirectoryRpc {
  return namedStub(env.RUN_INDEX, residency, workflow);
}

function rowOf(run: ListedRun): IndexRow {
  return {
    run_id: run.run_id,
    created_ms: Date.parse(run.created_at),
    status: run.status,
    finished_ms: run.finished_at === null ? null : Date.parse(run.finished_at),
    deliveries: run.deliveries?.total ?? 0,
    failed_deliveries: run.deliveries?.failed ?? 0,
    ...(run.compensation ? { compensation: run.compensation } : {}),
    ...(run.search ? { search: run.search } : {}),
    ...(run.scores ? { scores: run.scores } : {}),
  };
}

/** Where an entry the shard took without writing it waits: that shard, its incarnation, the batch. */
export interface ListingTicket {
  shard: string;
  epoch: string;
  batch: number;
}

/**
 * What this isolate has heard from each shard: its incarnation and how many batches it had written
 * (every answer is sent after the commits before it). The run objects of an isolate share it: an
 * entry waiting in batch n of an incarnation is written once any answer of that incarnation says n
 * batches are, so its run need not ask again. A hint only: without it, the run asks.
 */
const heard = new Map<string, { epoch: string; written: number }>();
/** Shards remembered (the oldest heard is forgotten first): a few hours of busy workflows. */
const HEARD_MAX = 2_048;

function hear(shard: string, a: RecordAnswer): void {
  const before = heard.get(shard);
  if (before?.epoch === a.epoch && before.written >= a.written) return;
  heard.delete(shard);
  heard.set(shard, { epoch: a.epoch, written: a.written });
  if (heard.size > HEARD_MAX) heard.delete(heard.keys().next().value as string);
}

/** Whether the batch a ticket names is known to be written (an answer of its incarnation said so). */
export function ticketWritten(t: ListingTicket): boolean {
  const h = heard.get(t.shard);
  return h !== undefined && h.epoch === t.epoch && h.written >= t.batch;
}

/**
 * Called by the run object (never on the invoke path): upserts the run's entry. The shard lists it
 * at once and answers when it will be durable (null: it is), with a ticket for the batch it waits
 * in; the run asks again then (`confirm`) unless the ticket is heard written meanwhile.
 */
export async function recordRun(
  env: Env,
  run: ListedRun,
  confirm = false,
): Promise<{ durableAt: number | null; ticket: ListingTicket | null }> {
  const row = rowOf(run);
  const ref = placeRun(run.workflow, run.run_id, row.created_ms);
  const answer = await shardStub(env, ref).record(ref, [row], confirm);
  return answered(shardKey(ref), answer);
}

/** What a shard's answer tells the writer (and this isolate, which hears it): when, and the ticket. */
function answered(
  shard: string,
  a: RecordAnswer,
): { durableAt: number | null; ticket: ListingTicket | null } {
  hear(shard, a);
  return {
    durableAt: a.durableAt,
    ticket: a.durableAt === null ? null : { shard, epoch: a.epoch, batch: a.batch },
  };
}

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
const riding = new Map<string, { ref: ShardRef; rows: Map<string, IndexRow> }>();
/** When the carrier collecting now sends (null: none is collecting). */
let carrierDue: number | null = null;
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
  const share = riding.get(shard) ?? { ref, rows: new Map<string, IndexRow>() };
  share.rows.set(entryKey(row), row);
  riding.set(shard, share);
  if (carrierDue !== null && now < carrierDue + CARRIER_LOST_MS) {
    return { durableAt: carrierDue + flushWindowMs(env), ticket: null };
  }
  // This run carries what is left until the window ends, or until runs stop finishing.
  const due = now + window;
  carrierDue = due;
  await untilDueOrQuiet(due);
  const shares = [...riding.values()];
  riding.clear();
  carrierDue = null;
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

/** Carried entries waiting for this isolate's Worker carrier, by shard (see `keepListed`). */
const carried = new Map<string, { ref: ShardRef; rows: Map<string, IndexRow> }>();
/** When the carrier collecting now sends (null: none is collecting). */
let carrierOfCarriedDue: number | null = null;

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
  const key = shardKey(ref);
  const share = carried.get(key) ?? { ref, rows: new Map<string, IndexRow>() };
  share.rows.set(entryKey(row), row);
  carried.set(key, share);
  if (carrierOfCarriedDue !== null && now < carrierOfCarriedDue + CARRIER_LOST_MS) return;
  const due = now + window;
  carrierOfCarriedDue = due;
  await untilDueOrQuiet(due);
  const shares = [...carried.values()];
  carried.clear();
  carrierOfCarriedDue = null;
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

/** DELETE /runs/{id}: a tombstone, so that a late write of the run cannot bring it back. */
export async function forgetRun(env: Env, run: ListedRun): Promise<void> {
  const row = rowOf(run);
  const ref = placeRun(run.workflow, run.run_id, row.created_ms);
  await shardStub(env, ref).forget(ref, row);
}

function newerFirst(a: IndexRow, b: IndexRow): number {
  if (a.created_ms !== b.created_ms) return b.created_ms - a.created_ms;
  return a.run_id < b.run_id ? 1 : a.run_id > b.run_id ? -1 : 0;
}

function listed(workflow: string, r: IndexRow): ListedRun {
  return {
    run_id: r.run_id,
    workflow,
    status: r.status,
    created_at: new Date(r.created_ms).toISOString(),
    finished_at: r.finished_ms === null ? null : new Date(r.finished_ms).toISOString(),
    compensation: r.compensation ?? null,
    ...(r.search ? { search: r.search } : {}),
    ...(r.scores ? { scores: r.scores } : {}),
  };
}

/**
 * One page, newest first: the directory names the shards, whole buckets are read newest first
 * (each shard returns at most limit + 1 entries after the position) until the page is full. A
 * page may be short with a `next` when the shard-read budget ran out at a bucket boundary.
 */
export async function listRuns(env: Env, q: ListQuery): Promise<ListPage> {
  const now = Date.now();
  const retention = retentionMs(env);
  // The newest bucket that can hold an entry after the position. A position without an id (a page
  // that ended at a bucket boundary) excludes its own millisecond, so the bucket it closes is not
  // read again: reading it would spend the shard budget on nothing, and the page would end empty
  // at the same boundary, again and again.
  const maxBucket = q.after
    ? Math.floor((q.after.id === "" ? q.after.t - 1 : q.after.t) / BUCKET_MS)
    : Number.MAX_SAFE_INTEGER;
  const shards = await directoryStub(env, q.workflow, q.residency).shards(maxBucket, now);
  const buckets = new Map<number, number[]>();
  for (const s of shards) buckets.set(s.bucket, [...(buckets.get(s.bucket) ?? []), s.shard]);
  const order = [...buckets.keys()].sort((a, b) => b - a);

  const found: IndexRow[] = [];
  let reads = 0;
  for (const [i, bucket] of order.entries()) {
    const members = buckets.get(bucket) ?? [];
    if (reads > 0 && reads + members.length > MAX_SHARD_READS) {
      return { runs: found.map((r) => listed(q.workflow, r)), next: { t: (bucket + 1) * BUCKET_MS, id: "" } };
    }
    reads += members.length;
    const pages = await Promise.all(
      members.map((shard) =>
        shardStub(env, { workflow: q.workflow, bucket, shard, residency: q.residency }).page(
          q.after,
          q.status,
          q.limit + 1,
          now - retention,
          q.deliveries ?? null,
          q.search ?? null,
        ),
      ),
    );
    for (const p of pages) found.push(...p);
    found.sort(newerFirst);
    const more = found.length > q.limit || (found.length === q.limit && i < order.length - 1);
    if (found.length >= q.limit) {
      const runs = found.slice(0, q.limit);
      const last = runs[runs.length - 1];
      return {
        runs: runs.map((r) => listed(q.workflow, r)),
        next: more && last ? { t: last.created_ms, id: last.run_id } : null,
      };
    }
  }
  return { runs: found.map((r) => listed(q.workflow, r)), next: null };
}
