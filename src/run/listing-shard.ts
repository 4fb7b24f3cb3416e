/**
 * The shard role of a run-listing object (run-index.ts says how the roles fit): the entries of the
 * runs created in one hour whose id hashes to it, one row per run keyed by (created_ms, run_id).
 * Its first write registers it in the workflow's directory (before the write is acknowledged, so
 * a reader never misses a shard that holds an entry) and arms its alarm for the moment every run
 * it can hold has passed retention; then it ends them, SWEEP_BATCH at a time (each run is asked to
 * delete itself), and when none is left it deletes itself. Writes are batched: entries that
 * arrive within FLUSH_MS are written in one commit, then all acknowledged (the output gate holds
 * those answers until the commit is durable, so an acknowledged entry is never lost).
 */
import type { RunStatus } from "../engine/types.ts";
import { type DeliveryFilter, directoryStub, type IndexRow, type Position } from "./listing.ts";
import { bucketExpiresMs, FLUSH_MS, MAX_RUN_MS, retentionMs, type ShardRef } from "./listing-layout.ts";
import { runStub } from "./run-rpc.ts";

const REGISTERED_KEY = "registered";
/** Runs one sweep alarm asks to expire: under the 50 subrequests of the Workers Free plan. */
const SWEEP_BATCH = 40;
/** When every run of a sweep failed to answer, the sweep tries again this much later. */
const SWEEP_RETRY_MS = 60_000;

/** Statuses a later write may still change (a queued run starts, an active one ends); a finished run's entry is final. */
const ACTIVE = "('queued', 'pending', 'running')";

interface PendingWrite {
  rows: IndexRow[];
  done: (err?: unknown) => void;
}

export class ListingShard {
  private entriesReady = false;
  private registered = false;
  private registering: Promise<void> | null = null;
  private pending: PendingWrite[] = [];
  private flushTimer: ReturnType<typeof setTimeout> | null = null;
  private readonly ctx: DurableObjectState;
  private readonly env: Env;

  constructor(ctx: DurableObjectState, env: Env) {
    this.ctx = ctx;
    this.env = env;
  }

  /** Resolves once the entries are durably written (with the others of the same batch). */
  async record(ref: ShardRef, rows: IndexRow[]): Promise<void> {
    await this.shardReady(ref);
    await new Promise<void>((resolve, reject) => {
      this.pending.push({ rows, done: (err) => (err === undefined ? resolve() : reject(err)) });
      this.flushTimer ??= setTimeout(() => this.flush(), FLUSH_MS);
    });
  }

  private flush(): void {
    this.flushTimer = null;
    const batch = this.pending;
    this.pending = [];
    const sql = this.ctx.storage.sql;
    try {
      this.ensureEntries();
      // One synchronous block: one implicit transaction, one commit for the whole batch.
      for (const w of batch) {
        for (const r of w.rows) {
          // A finished run's status is final; its deliveries' counts still change (a delivery
          // that fails a day later, one recovered).
          sql.exec(
            `INSERT INTO listing (created_ms, run_id, status, finished_ms, deliveries, failed_deliveries)
             VALUES (?, ?, ?, ?, ?, ?)
             ON CONFLICT (created_ms, run_id) DO UPDATE SET
               status = CASE WHEN listing.status IN ${ACTIVE} THEN excluded.status ELSE listing.status END,
               finished_ms = CASE WHEN listing.status IN ${ACTIVE} THEN excluded.finished_ms ELSE listing.finished_ms END,
               deliveries = excluded.deliveries, failed_deliveries = excluded.failed_deliveries
             WHERE listing.status != 'deleted'`,
            r.created_ms,
            r.run_id,
            r.status,
            r.finished_ms,
            r.deliveries ?? 0,
            r.failed_deliveries ?? 0,
          );
        }
      }
    } catch (err) {
      for (const w of batch) w.done(err);
      return;
    }
    for (const w of batch) w.done();
  }

  /** A tombstone: hidden from reads, and no later write of the run can bring the entry back. */
  async forget(ref: ShardRef, row: IndexRow): Promise<void> {
    await this.shardReady(ref);
    this.ctx.storage.sql.exec(
      `INSERT INTO listing (created_ms, run_id, status, finished_ms) VALUES (?, ?, 'deleted', NULL)
       ON CONFLICT (created_ms, run_id) DO UPDATE SET status = 'deleted', finished_ms = NULL`,
      row.created_ms,
      row.run_id,
    );
  }

  /** Up to `limit` entries older than `after`, newest first; runs past retention are left out. */
  async page(
    after: Position | null,
    status: RunStatus | null,
    limit: number,
    finishedAfter: number,
    deliveries: DeliveryFilter = null,
  ): Promise<IndexRow[]> {
    if (!hasTable(this.ctx, "listing")) return [];
    this.ensureEntries();
    const t = after ? after.t : Number.MAX_SAFE_INTEGER;
    const id = after ? after.id : "";
    let filter = status === null ? "" : "AND status = ?";
    if (deliveries === "any") filter += " AND deliveries > 0";
    if (deliveries === "failed") filter += " AND failed_deliveries > 0";
    const args: Array<string | number> = [t, t, id, finishedAfter];
    if (status !== null) args.push(status);
    args.push(limit);
    return this.ctx.storage.sql
      .exec<{
        run_id: string;
        created_ms: number;
        status: RunStatus;
        finished_ms: number | null;
        deliveries: number;
        failed_deliveries: number;
      }>(
        `SELECT run_id, created_ms, status, finished_ms, deliveries, failed_deliveries FROM listing
         WHERE (created_ms < ? OR (created_ms = ? AND run_id < ?))
           AND status != 'deleted' AND (finished_ms IS NULL OR finished_ms > ?) ${filter}
         ORDER BY created_ms DESC, run_id DESC LIMIT ?`,
        ...args,
      )
      .toArray()
      .map((r) => ({ ...r }));
  }

  /**
   * The shard's hour has passed retention: its runs are asked to go, then the shard goes. "Due"
   * is the listing's own rule (finished + RUN_RETENTION_S, as read today), so a run whose
   * retention was raised since the shard was made waits for its time.
   */
  async alarm(): Promise<void> {
    const sql = this.ctx.storage.sql;
    if (this.pending.length > 0) {
      // Entries waiting for their batch: never drop a shard under them (they say when they are due).
      await this.ctx.storage.setAlarm(Date.now() + FLUSH_MS * 2);
      return;
    }
    if (!hasTable(this.ctx, "listing")) return this.dropShard();
    const retention = retentionMs(this.env);
    const dueAt = `COALESCE(finished_ms, created_ms + ${MAX_RUN_MS}) + ?`;
    const due = sql
      .exec<{ created_ms: number; run_id: string }>(
        `SELECT created_ms, run_id FROM listing WHERE status != 'deleted' AND ${dueAt} <= ? LIMIT ?`,
        retention,
        Date.now(),
        SWEEP_BATCH,
      )
      .toArray();
    const results = await Promise.allSettled(due.map((r) => this.expireRun(r.run_id)));
    let answered = 0;
    results.forEach((res, i) => {
      const r = due[i];
      if (res.status === "rejected" || !r) return;
      answered += 1;
      sql.exec("DELETE FROM listing WHERE created_ms = ? AND run_id = ?", r.created_ms, r.run_id);
    });
    if (due.length > 0 && answered === 0) {
      // Nobody answered (an outage): try again later.
      await this.ctx.storage.setAlarm(Date.now() + SWEEP_RETRY_MS);
      return;
    }
    if (due.length === SWEEP_BATCH) {
      // Possibly more due: go on at once, one batch per alarm.
      await this.ctx.storage.setAlarm(Date.now());
      return;
    }
    const next = sql
      .exec<{ at: number | null }>(
        `SELECT MIN(${dueAt}) AS at FROM listing WHERE status != 'deleted'`,
        retention,
      )
      .one().at;
    if (next === null) return this.dropShard();
    await this.ctx.storage.setAlarm(next);
  }

  private async dropShard(): Promise<void> {
    await this.ctx.storage.deleteAll();
    this.entriesReady = false;
    this.registered = false;
    this.registering = null;
  }

  private async expireRun(runId: string): Promise<void> {
    await runStub(this.env, runId)?.expire();
  }

  private ensureEntries(): void {
    if (this.entriesReady) return;
    const sql = this.ctx.storage.sql;
    sql.exec(
      `CREATE TABLE IF NOT EXISTS listing (
         created_ms INTEGER NOT NULL, run_id TEXT NOT NULL, status TEXT NOT NULL, finished_ms INTEGER,
         deliveries INTEGER NOT NULL DEFAULT 0, failed_deliveries INTEGER NOT NULL DEFAULT 0,
         PRIMARY KEY (created_ms, run_id)) WITHOUT ROWID`,
    );
    // A shard made before deliveries were listed gets their columns once.
    const columns = sql.exec<{ name: string }>("SELECT name FROM pragma_table_info('listing')").toArray();
    if (!columns.some((c) => c.name === "deliveries"))
      sql.exec(
        `ALTER TABLE listing ADD COLUMN deliveries INTEGER NOT NULL DEFAULT 0;
         ALTER TABLE listing ADD COLUMN failed_deliveries INTEGER NOT NULL DEFAULT 0`,
      );
    this.entriesReady = true;
  }

  private shardReady(ref: ShardRef): Promise<void> {
    this.ensureEntries();
    if (this.registered || this.ctx.storage.kv.get<boolean>(REGISTERED_KEY)) {
      this.registered = true;
      return Promise.resolve();
    }
    // Concurrent first writes share one registration.
    this.registering ??= this.registerShard(ref).catch((err: unknown) => {
      this.registering = null;
      throw err;
    });
    return this.registering;
  }

  private async registerShard(ref: ShardRef): Promise<void> {
    const expires = bucketExpiresMs(ref.bucket, retentionMs(this.env));
    await directoryStub(this.env, ref.workflow).register(ref.bucket, ref.shard, expires);
    this.ctx.storage.kv.put(REGISTERED_KEY, true);
    await this.ctx.storage.setAlarm(expires);
    this.registered = true;
  }
}

/** Whether the object's SQLite database has table `name`. */
export function hasTable(ctx: DurableObjectState, name: string): boolean {
  return (
    ctx.storage.sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", name).toArray()
      .length > 0
  );
}
