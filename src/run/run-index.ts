/**
 * Recent runs of one workflow (one object per workflow name), for GET /runs?workflow=NAME and
 * the run viewer. It keeps ids and creation times only; statuses are read from the runs
 * themselves, so a run never has to report back here.
 */
import { DurableObject } from "cloudflare:workers";

/** How many run ids an index keeps. */
export const INDEX_CAPACITY = 200;
/** The table may hold up to INDEX_CAPACITY + TRIM_EVERY - 1 ids between trims. */
const TRIM_EVERY = 50;

export interface IndexedRun {
  run_id: string;
  created_at: string;
}

export class RunIndex extends DurableObject<Env> {
  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    ctx.storage.sql.exec(
      "CREATE TABLE IF NOT EXISTS runs (run_id TEXT PRIMARY KEY, created_at TEXT NOT NULL)",
    );
  }

  /** Starts full so that the first add after a wake-up trims (the row count is not known). */
  private addsSinceTrim = TRIM_EVERY;

  async add(run: IndexedRun): Promise<void> {
    const sql = this.ctx.storage.sql;
    sql.exec("INSERT OR IGNORE INTO runs (run_id, created_at) VALUES (?, ?)", run.run_id, run.created_at);
    // Trimming sorts the whole table: once per TRIM_EVERY adds, not on every invoke (npm run bench
    // measured it as the largest SQLite cost of a run). `list` never shows more than the capacity.
    this.addsSinceTrim += 1;
    if (this.addsSinceTrim < TRIM_EVERY) return;
    this.addsSinceTrim = 0;
    sql.exec(
      "DELETE FROM runs WHERE run_id NOT IN (SELECT run_id FROM runs ORDER BY created_at DESC LIMIT ?)",
      INDEX_CAPACITY,
    );
  }

  async remove(runId: string): Promise<void> {
    this.ctx.storage.sql.exec("DELETE FROM runs WHERE run_id = ?", runId);
  }

  async list(limit: number): Promise<IndexedRun[]> {
    return this.ctx.storage.sql
      .exec<{ run_id: string; created_at: string }>(
        "SELECT run_id, created_at FROM runs ORDER BY created_at DESC LIMIT ?",
        Math.max(1, Math.min(limit, INDEX_CAPACITY)),
      )
      .toArray();
  }
}

export interface RunIndexRpc {
  add(run: IndexedRun): Promise<void>;
  remove(runId: string): Promise<void>;
  list(limit: number): Promise<IndexedRun[]>;
}
