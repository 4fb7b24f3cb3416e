/**
 * The Durable Object class of the run listing (src/run/listing/listing.ts says how it fits together). One
 * class, two roles, told apart by the object's name: a **shard** (`<workflow>\n<hour bucket>\n<shard>`,
 * listing-shard.ts) holds the entries of the runs created in that hour whose id hashes to it; the
 * **directory** (`<workflow>`, listing-directory.ts) lists the shards that exist. (One class,
 * because migration v1 created it before the listing was sharded.)
 */
import { DurableObject } from "cloudflare:workers";
import type { RunStatus } from "../../engine/types.ts";
import type { EntryFilter, IndexRow, Position, RecordAnswer } from "./listing.ts";
import { ListingDirectory } from "./listing-directory.ts";
import type { ShardRef } from "./listing-layout.ts";
import { ListingShard } from "./listing-shard.ts";

export class RunIndex extends DurableObject<Env> {
  private readonly shard: ListingShard;
  private readonly directory: ListingDirectory;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.shard = new ListingShard(ctx, env);
    this.directory = new ListingDirectory(ctx, env);
  }

  /** Shard: takes the entries (listed at once); answers when they will be durable. */
  async record(ref: ShardRef, rows: IndexRow[], confirm = false): Promise<RecordAnswer> {
    return this.shard.record(ref, rows, confirm);
  }

  /** Shard: takes the entries; answers once they are written (an express run's, carried by the Worker). */
  async recordWritten(ref: ShardRef, rows: IndexRow[]): Promise<void> {
    return this.shard.recordWritten(ref, rows);
  }

  /** Shard: a tombstone, so that a late write of the run cannot bring it back. */
  async forget(ref: ShardRef, row: IndexRow): Promise<void> {
    return this.shard.forget(ref, row);
  }

  /** Shard: up to `limit` entries older than `after`, newest first. */
  async page(
    after: Position | null,
    status: RunStatus | null,
    limit: number,
    finishedAfter: number,
    deliveries: EntryFilter = null,
    search: Record<string, string> | null = null,
  ) {
    return this.shard.page(after, status, limit, finishedAfter, deliveries, search);
  }

  /** Shard: its hour has passed retention. */
  override async alarm(): Promise<void> {
    return this.shard.alarm();
  }

  /** Directory: a shard exists. */
  async register(bucket: number, shard: number, expiresMs: number): Promise<void> {
    return this.directory.register(bucket, shard, expiresMs);
  }

  /** Directory: the shards up to `maxBucket` that have not expired. */
  async shards(maxBucket: number, now: number): Promise<Array<{ bucket: number; shard: number }>> {
    return this.directory.shards(maxBucket, now);
  }
}
