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
import { BUCKET_MS, MAX_SHARD_READS, placeRun, retentionMs, type ShardRef } from "./listing-layout.ts";

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
export function shardKey(ref: ShardRef): string {
  return `${ref.residency ?? ""}\n${shardName(ref)}`;
}

/** A shard, in its runs' jurisdiction. */
export function shardStub(env: Env, ref: ShardRef): ShardRpc {
  return namedStub(env.RUN_INDEX, ref.residency ?? null, shardName(ref));
}

/** The workflow's directory of shards, in its runs' jurisdiction. */
export function directoryStub(env: Env, workflow: string, residency: Residency | null): DirectoryRpc {
  return namedStub(env.RUN_INDEX, residency, workflow);
}

export function rowOf(run: ListedRun): IndexRow {
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
export function answered(
  shard: string,
  a: RecordAnswer,
): { durableAt: number | null; ticket: ListingTicket | null } {
  hear(shard, a);
  return {
    durableAt: a.durableAt,
    ticket: a.durableAt === null ? null : { shard, epoch: a.epoch, batch: a.batch },
  };
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
