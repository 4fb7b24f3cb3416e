/**
 * The directory role of a run-listing object (run-index.ts says how the roles fit): one per
 * workflow, listing the shards that exist with their expiry, so a read visits only shards that
 * hold runs. It is the object that kept the whole listing before (migration v1 created the class):
 * its old `runs` table is moved into the shards once, by asking each run to report itself again.
 */

import { runStub } from "../run-rpc.ts";
import { hasTable } from "./listing-shard.ts";

/** The directory drops expired shards at most this often. */
const PRUNE_EVERY_MS = 3_600_000;

export class ListingDirectory {
  private directoryReady = false;
  private lastPrune = 0;
  private legacyMove: Promise<void> | null = null;
  private readonly ctx: DurableObjectState;
  private readonly env: Env;

  constructor(ctx: DurableObjectState, env: Env) {
    this.ctx = ctx;
    this.env = env;
  }

  async register(bucket: number, shard: number, expiresMs: number): Promise<void> {
    this.ensureDirectory();
    const sql = this.ctx.storage.sql;
    sql.exec(
      "INSERT OR IGNORE INTO shards (bucket, shard, expires_ms) VALUES (?, ?, ?)",
      bucket,
      shard,
      expiresMs,
    );
    const now = Date.now();
    if (now - this.lastPrune > PRUNE_EVERY_MS) {
      this.lastPrune = now;
      sql.exec("DELETE FROM shards WHERE expires_ms <= ?", now);
    }
    this.moveLegacyIndex();
  }

  async shards(maxBucket: number, now: number): Promise<Array<{ bucket: number; shard: number }>> {
    if (!hasTable(this.ctx, "shards")) return [];
    return this.ctx.storage.sql
      .exec<{ bucket: number; shard: number }>(
        "SELECT bucket, shard FROM shards WHERE bucket <= ? AND expires_ms > ? ORDER BY bucket DESC, shard",
        maxBucket,
        now,
      )
      .toArray()
      .map((r) => ({ bucket: r.bucket, shard: r.shard }));
  }

  private ensureDirectory(): void {
    if (this.directoryReady) return;
    this.ctx.storage.sql.exec(
      `CREATE TABLE IF NOT EXISTS shards (
         bucket INTEGER NOT NULL, shard INTEGER NOT NULL, expires_ms INTEGER NOT NULL,
         PRIMARY KEY (bucket, shard)) WITHOUT ROWID`,
    );
    this.directoryReady = true;
  }

  /**
   * Before the sharded listing, this object kept a workflow's newest run ids in a `runs` table.
   * Each of those runs reports itself again (RunObject.relist), which lands it in its shard; then
   * the table goes. Runs whose storage is gone answer nothing and are simply not listed.
   */
  private moveLegacyIndex(): void {
    if (this.legacyMove || !hasTable(this.ctx, "runs")) return;
    this.legacyMove = (async () => {
      const sql = this.ctx.storage.sql;
      const ids = sql.exec<{ run_id: string }>("SELECT run_id FROM runs").toArray();
      await Promise.all(
        ids.map(async ({ run_id }) => {
          await runStub(this.env, run_id)?.relist();
        }),
      );
      sql.exec("DROP TABLE runs");
    })().catch(() => {
      // Tried again on the next registration.
      this.legacyMove = null;
    });
  }
}
