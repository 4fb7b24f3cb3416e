/**
 * Where the run listing keeps a run's entry (src/run/listing/listing.ts says why): the hour bucket of its
 * creation time and one of SHARDS_PER_BUCKET shards by a hash of its run id, and how long those
 * objects live. Pure arithmetic, shared by the listing, the run object and the bench.
 */
import type { Residency } from "../../bundle.ts";
import { shortenedMs } from "../../common/shortened-ms.ts";
import type { RunStatus } from "../../engine/types.ts";
import { residencyOfRun } from "../jurisdiction.ts";

export const BUCKET_MS = 3_600_000;
export const SHARDS_PER_BUCKET = 32;
/**
 * Shard reads one listing request may make (plus one directory read): under the 50 subrequests
 * a Worker request gets on the Workers Free plan. A bucket's shards are read together, so a page
 * stops at a bucket boundary when the next bucket would not fit, and says where to go on.
 */
export const MAX_SHARD_READS = 48;
/**
 * How long a shard collects entries before writing them together (listing-shard.ts): what it holds
 * is listed at once; this is only how long an entry waits for its row, and the run's alarm that
 * guards it asks again then.
 */
export const FLUSH_WINDOW_MS = 8_000;

/**
 * How long a run that carries other runs' entries to their shards collects them first (listing.ts,
 * "Entries ride together"): under load a shard then hears from an isolate once per window, not once
 * per run.
 */
export const RIDE_WINDOW_MS = 1_000;

/** The ride window in use: RIDE_WINDOW_MS, or the `LISTING_RIDE_MS` var (shorter; `off`: no riding). */
export function rideWindowMs(env: object): number {
  if ((env as Record<string, unknown>).LISTING_RIDE_MS === "off") return 0;
  return shortenedMs(env, "LISTING_RIDE_MS", RIDE_WINDOW_MS);
}

/** The flush window in use: FLUSH_WINDOW_MS, or the `LISTING_FLUSH_MS` var (tests shorten it; at most 8 s). */
export function flushWindowMs(env: object): number {
  return shortenedMs(env, "LISTING_FLUSH_MS", FLUSH_WINDOW_MS);
}
/** The longest a run can be active (`timeout_s` at most 86400) plus slack for a late alarm. */
export const MAX_RUN_MS = 86_400_000 + 3_600_000;
export const DEFAULT_RETENTION_S = 7 * 24 * 3600;

/** Which shard object of which bucket holds a run: its (workflow, bucket, shard), in its jurisdiction. */
export interface ShardRef {
  workflow: string;
  bucket: number;
  shard: number;
  /** The runs' jurisdiction (absent or null: none). */
  residency?: Residency | null;
}

export function retentionMs(env: { RUN_RETENTION_S?: string }): number {
  const s = Number(env.RUN_RETENTION_S ?? DEFAULT_RETENTION_S);
  return (Number.isFinite(s) && s > 0 ? s : DEFAULT_RETENTION_S) * 1000;
}

/** When a bucket's shard may go: the last run it can hold has finished and passed retention. */
export function bucketExpiresMs(bucket: number, retention: number): number {
  return (bucket + 1) * BUCKET_MS + MAX_RUN_MS + retention;
}

/** FNV-1a over the run id: run ids of idempotent invokes are not random in every digit. */
export function shardOf(runId: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < runId.length; i++) {
    h ^= runId.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0) % SHARDS_PER_BUCKET;
}

export function placeRun(workflow: string, runId: string, createdMs: number): ShardRef {
  const bucket = Math.floor(createdMs / BUCKET_MS);
  return { workflow, bucket, shard: shardOf(runId), residency: residencyOfRun(runId) };
}

const ENDED: ReadonlySet<RunStatus> = new Set(["complete", "failed", "canceled"]);

/**
 * What a listing entry says of a run: its status, and once it has ended its deliveries and its
 * compensation phase (listing.ts).
 */
export function listKey(
  status: RunStatus,
  deliveries: { total: number; failed: number } | null,
  compensation: string | null = null,
): string {
  const key = ENDED.has(status) && deliveries ? `${status} ${deliveries.total} ${deliveries.failed}` : status;
  return ENDED.has(status) && compensation ? `${key} compensation:${compensation}` : key;
}

/** A run's scores as its listing entry carries them: `[step, scorer, value, arm]`, and the workflow's version. */
export interface ListedScores {
  v: string | null;
  s: Array<[string, string, number, string | null]>;
}
