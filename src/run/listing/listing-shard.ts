/**
 * The shard role of a run-listing object (run-index.ts says how the roles fit): the entries of the
 * runs created in one hour whose id hashes to it (docs/operations.md, "The run listing").
 *
 * **Entries ride together.** A shard keeps the entries it is sent in memory and writes them
 * FLUSH_WINDOW_MS (listing-layout.ts) later (or once MAX_BUFFER are waiting) as one row per SLICE_MS of creation time
 * they fall in: under load a row carries tens of entries, so the listing writes a small fraction of
 * a row per run instead of one. A read merges what is written with what waits, so an entry is
 * listed the moment it arrives. A write is answered at once with when it will be durable; the run
 * keeps the alarm that guards its entry until then and asks again (`record` with the same entry):
 * the answer is "durable" once a written row holds that version, and a shard that lost its memory
 * (an eviction, a deploy) takes the entry again. So no entry is lost and no run waits on a write.
 * Every answer also says which incarnation of the shard answers (`epoch`, new in each one), which
 * batch the entries wait in and how many batches that incarnation has written: a run whose batch
 * another answer of the same incarnation reports written need not ask again (listing.ts).
 *
 * Versions of one run merge by rule, not by arrival: a tombstone (DELETE) wins, a finished status
 * wins over an active one, and among equals the later write. Its first write registers the shard in
 * the workflow's directory and arms its alarm for the moment every run it can hold has passed
 * retention; then it asks its runs to go, SWEEP_BATCH at a time, and deletes itself. Entries of the
 * table a shard kept before (one row per run) are read alongside and swept the same way.
 */
import type { RunStatus } from "../../engine/types.ts";
import { runStub } from "../run-rpc.ts";
import {
  directoryStub,
  type EntryFilter,
  entryKey,
  type IndexRow,
  type Position,
  type RecordAnswer,
} from "./listing.ts";
import { bucketExpiresMs, flushWindowMs, MAX_RUN_MS, retentionMs, type ShardRef } from "./listing-layout.ts";
import { matches, type Packed, pack, unpack } from "./listing-pack.ts";

const REGISTERED_KEY = "registered";
const SWEEP_KEY = "swept";
/** Runs one sweep alarm asks to expire: under the 50 subrequests of the Workers Free plan. */
const SWEEP_BATCH = 40;
/** When every run of a sweep failed to answer, the sweep tries again this much later. */
const SWEEP_RETRY_MS = 60_000;
/** Entries are written in rows by this much creation time. */
export const SLICE_MS = 30_000;
/** A buffer this full is written at once. */
const MAX_BUFFER = 1_000;

const ACTIVE: ReadonlySet<string> = new Set(["queued", "pending", "running"]);

const versionOf = (r: IndexRow): string => JSON.stringify(pack(r));

/** Which of two versions of a run's entry stands: a tombstone, then a finished status, then `newer`. */
export function mergeEntry(older: IndexRow | undefined, newer: IndexRow): IndexRow {
  if (!older) return newer;
  if ((older.status as string) === "deleted") return older;
  if ((newer.status as string) === "deleted") return newer;
  if (!ACTIVE.has(older.status) && ACTIVE.has(newer.status)) return older;
  return newer;
}

export class ListingShard {
  private registered = false;
  private registering: Promise<void> | null = null;
  private batchesReady = false;
  private seq = -1;
  /** Entries waiting to be written, by run. */
  private buffer = new Map<string, IndexRow>();
  private flushAt: number | null = null;
  private flushTimer: ReturnType<typeof setTimeout> | null = null;
  /** The version of each entry written in this incarnation (a run asking again is answered from it). */
  private written = new Map<string, string>();
  /** Names this incarnation in answers: entries it has not written are gone with it. */
  private readonly epoch = crypto.randomUUID();
  /** Batches written by this incarnation; what waits in the buffer is batch `batches + 1`. */
  private batches = 0;
  /** Callers of `recordWritten`: the next batch written holds their entries. */
  private awaiting: Array<() => void> = [];
  private readonly ctx: DurableObjectState;
  private readonly env: Env;

  constructor(ctx: DurableObjectState, env: Env) {
    this.ctx = ctx;
    this.env = env;
  }

  /**
   * Takes the entries; answers when they will be durable (null: they are). `confirm`: the run asks
   * again after the time it was given; its entry is then looked for in storage too.
   */
  async record(ref: ShardRef, rows: IndexRow[], confirm = false): Promise<RecordAnswer> {
    await this.shardReady(ref);
    let waiting = false;
    for (const r of rows) {
      if (this.isWritten(r, confirm)) continue;
      this.buffer.set(entryKey(r), mergeEntry(this.buffer.get(entryKey(r)), r));
      waiting = true;
    }
    if (!waiting) return this.answer(null);
    const batch = this.batches + 1;
    if (this.buffer.size >= MAX_BUFFER) this.flush();
    else this.scheduleFlush();
    // Written already (a full buffer): the answer leaves after that commit.
    if (this.batches >= batch) return this.answer(null);
    return this.answer(this.flushAt ?? Date.now(), batch);
  }

  /**
   * Takes the entries and answers once a written row holds them (an express run's entry, carried
   * by the Worker that answered it: listing.ts, `keepListed`). A reset of this incarnation before
   * then fails the call, and the caller sends them to the next one.
   */
  async recordWritten(ref: ShardRef, rows: IndexRow[]): Promise<void> {
    const { durableAt } = await this.record(ref, rows);
    if (durableAt !== null) await new Promise<void>((written) => this.awaiting.push(written));
  }

  private answer(durableAt: number | null, batch = this.batches): RecordAnswer {
    return { durableAt, epoch: this.epoch, batch, written: this.batches };
  }

  /** A tombstone, durable before the answer: no later write of the run can bring the entry back. */
  async forget(ref: ShardRef, row: IndexRow): Promise<void> {
    await this.shardReady(ref);
    this.buffer.set(entryKey(row), { ...row, status: "deleted" as RunStatus, finished_ms: null });
    this.flush();
  }

  /** Up to `limit` entries older than `after`, newest first; runs past retention are left out. */
  async page(
    after: Position | null,
    status: RunStatus | null,
    limit: number,
    finishedAfter: number,
    deliveries: EntryFilter = null,
    search: Record<string, string> | null = null,
  ): Promise<IndexRow[]> {
    const t = after ? after.t : Number.MAX_SAFE_INTEGER;
    const id = after ? after.id : "";
    const keep = (r: IndexRow) =>
      (r.created_ms < t || (r.created_ms === t && r.run_id < id)) &&
      (r.status as string) !== "deleted" &&
      (r.finished_ms === null || r.finished_ms > finishedAfter) &&
      (status === null || r.status === status) &&
      (deliveries !== "any" || (r.deliveries ?? 0) > 0) &&
      (deliveries !== "failed" || (r.failed_deliveries ?? 0) > 0) &&
      (deliveries !== "compensation_failed" || r.compensation === "failed") &&
      (search === null || Object.entries(search).every(([k, v]) => matches(r, k, v)));
    const merged = new Map<string, IndexRow>();
    const take = (r: IndexRow) => merged.set(entryKey(r), mergeEntry(r, merged.get(entryKey(r)) ?? r));
    // What waits is the newest of all; then written rows, newest first.
    for (const r of this.buffer.values()) merged.set(entryKey(r), r);
    for (const r of this.legacy(t, id, limit)) take(r);
    const sql = this.ctx.storage.sql;
    if (this.hasBatches()) {
      const top = Math.floor(Math.min(t, Number.MAX_SAFE_INTEGER) / SLICE_MS);
      let slice: number | null = null;
      const rows = sql.exec<{ slice: number; entries: string }>(
        "SELECT slice, entries FROM batches WHERE slice <= ? ORDER BY slice DESC, seq DESC",
        top,
      );
      for (const row of rows) {
        if (slice !== null && row.slice !== slice) {
          // Everything older than this slice is older than what is found: enough found?
          const found = [...merged.values()].filter(
            (r) => keep(r) && r.created_ms >= (slice as number) * SLICE_MS,
          );
          if (found.length >= limit) break;
        }
        slice = row.slice;
        for (const p of JSON.parse(row.entries) as Packed[]) take(unpack(p));
      }
    }
    return [...merged.values()]
      .filter(keep)
      .sort((a, b) => b.created_ms - a.created_ms || (a.run_id < b.run_id ? 1 : -1))
      .slice(0, limit);
  }

  /**
   * The shard's hour has passed retention: its runs past retention (finished + RUN_RETENTION_S, as
   * read today) are asked to go, SWEEP_BATCH per alarm, in creation order from where the last alarm
   * stopped, and leave the listing. A pass that finds none left waits for the next one due (a run
   * whose retention was raised since), or, with nothing left, the shard goes.
   */
  async alarm(): Promise<void> {
    if (this.buffer.size > 0) this.flush();
    const now = Date.now();
    const retention = retentionMs(this.env);
    const dueAt = (r: IndexRow) => (r.finished_ms ?? r.created_ms + MAX_RUN_MS) + retention;
    const kv = this.ctx.storage.kv;
    const from = kv.get<string>(SWEEP_KEY) ?? "";
    const due = this.entriesAfter(from, SWEEP_BATCH, (r) => dueAt(r) <= now);
    if (due.length === 0) {
      // The pass is over: what is left waits for its own time.
      const left = this.entriesAfter("", Number.MAX_SAFE_INTEGER, () => true);
      if (left.length === 0) return this.dropShard();
      kv.delete(SWEEP_KEY);
      await this.ctx.storage.setAlarm(Math.max(now, Math.min(...left.map(dueAt))));
      return;
    }
    const results = await Promise.allSettled(due.map((r) => runStub(this.env, r.run_id)?.expire()));
    if (results.every((r) => r.status === "rejected")) {
      // Nobody answered (an outage): try again later.
      await this.ctx.storage.setAlarm(now + SWEEP_RETRY_MS);
      return;
    }
    // Those that answered leave the listing (one row for the batch of them).
    results.forEach((res, i) => {
      const r = due[i] as IndexRow;
      if (res.status === "fulfilled") this.buffer.set(entryKey(r), { ...r, status: "deleted" as RunStatus });
    });
    this.flush();
    kv.put(SWEEP_KEY, sweepKey(due[due.length - 1] as IndexRow));
    await this.ctx.storage.setAlarm(now);
  }

  private scheduleFlush(): void {
    if (this.flushTimer) return;
    const window = flushWindowMs(this.env);
    this.flushAt = Date.now() + window;
    this.flushTimer = setTimeout(() => this.flush(), window);
  }

  /** One commit: each SLICE_MS of creation time among the waiting entries becomes one row. */
  private flush(): void {
    if (this.flushTimer) clearTimeout(this.flushTimer);
    this.flushTimer = null;
    this.flushAt = null;
    if (this.buffer.size === 0) return;
    const batch = this.buffer;
    this.buffer = new Map();
    this.ensureBatches();
    const sql = this.ctx.storage.sql;
    if (this.seq < 0)
      this.seq = sql.exec<{ s: number | null }>("SELECT MAX(seq) AS s FROM batches").one().s ?? 0;
    const slices = new Map<number, Packed[]>();
    for (const r of batch.values()) {
      const s = Math.floor(r.created_ms / SLICE_MS);
      slices.set(s, [...(slices.get(s) ?? []), pack(r)]);
    }
    for (const [slice, entries] of slices) {
      this.seq += 1;
      sql.exec(
        "INSERT INTO batches (slice, seq, entries) VALUES (?, ?, ?)",
        slice,
        this.seq,
        JSON.stringify(entries),
      );
    }
    this.batches += 1;
    // Answered within this event: the output gate holds the answers until the commit lands.
    for (const written of this.awaiting.splice(0)) written();
    for (const r of batch.values()) this.written.set(entryKey(r), versionOf(r));
    // Remembered only for the runs that may still ask (their alarm comes within a window or two).
    if (this.written.size > 4 * MAX_BUFFER) this.written = new Map([...this.written].slice(-2 * MAX_BUFFER));
  }

  /** Whether this version of the run's entry is in a written row (this incarnation's; with `look`, storage's). */
  private isWritten(r: IndexRow, look: boolean): boolean {
    const v = versionOf(r);
    if (this.written.get(entryKey(r)) === v) return true;
    if (!look || this.buffer.has(entryKey(r)) || !this.hasBatches()) return false;
    const rows = this.ctx.storage.sql.exec<{ entries: string }>(
      "SELECT entries FROM batches WHERE slice = ? ORDER BY seq DESC",
      Math.floor(r.created_ms / SLICE_MS),
    );
    let stands: IndexRow | undefined;
    for (const row of rows)
      for (const p of JSON.parse(row.entries) as Packed[])
        if (p[0] === r.run_id && p[1] === r.created_ms) stands = mergeEntry(unpack(p), stands ?? unpack(p));
    if (stands && versionOf(stands) === v) this.written.set(entryKey(r), v);
    return stands !== undefined && versionOf(stands) === v;
  }

  /**
   * Up to `n` entries (not tombstones) after `from` in the sweep's order (creation time, then run
   * id), merged: read slice by slice from `from`'s, so a sweep never reads the whole shard.
   */
  private entriesAfter(from: string, n: number, pick: (r: IndexRow) => boolean): IndexRow[] {
    const fromMs = from === "" ? 0 : Number(from.slice(0, 15));
    const after = (r: IndexRow) => (r.status as string) !== "deleted" && sweepKey(r) > from && pick(r);
    const byKey = (a: IndexRow, b: IndexRow) => (sweepKey(a) < sweepKey(b) ? -1 : 1);
    const out = this.legacyAfter(fromMs).filter(after);
    if (this.hasBatches()) {
      const rows = this.ctx.storage.sql.exec<{ slice: number; entries: string }>(
        "SELECT slice, entries FROM batches WHERE slice >= ? ORDER BY slice, seq",
        Math.floor(fromMs / SLICE_MS),
      );
      let slice: number | null = null;
      let merged = new Map<string, IndexRow>();
      const close = () => out.push(...[...merged.values()].filter(after));
      for (const row of rows) {
        if (slice !== null && row.slice !== slice) {
          close();
          merged = new Map();
          // Later slices hold only later entries than what is found.
          if (out.filter((r) => r.created_ms < row.slice * SLICE_MS).length >= n) break;
        }
        slice = row.slice;
        for (const p of JSON.parse(row.entries) as Packed[]) {
          const r = unpack(p);
          merged.set(entryKey(r), mergeEntry(merged.get(entryKey(r)), r));
        }
      }
      close();
    }
    return out.sort(byKey).slice(0, n);
  }

  /** Entries of the table a shard kept before entries rode together (one row per run), newest first. */
  private legacy(t: number, id: string, limit: number): IndexRow[] {
    if (!hasTable(this.ctx, "listing")) return [];
    const columns = this.ctx.storage.sql
      .exec<{ name: string }>("SELECT name FROM pragma_table_info('listing')")
      .toArray()
      .map((c) => c.name);
    const counts = columns.includes("deliveries") ? ", deliveries, failed_deliveries" : "";
    return this.ctx.storage.sql
      .exec<{ run_id: string; created_ms: number; status: string; finished_ms: number | null }>(
        `SELECT run_id, created_ms, status, finished_ms${counts} FROM listing
         WHERE created_ms < ? OR (created_ms = ? AND run_id < ?)
         ORDER BY created_ms DESC, run_id DESC LIMIT ?`,
        t,
        t,
        id,
        Math.min(limit + 1, Number.MAX_SAFE_INTEGER),
      )
      .toArray()
      .map((r) => ({ ...(r as unknown as IndexRow) }));
  }

  /** Entries of the old table created at or after `fromMs`, oldest first (it only shrinks: no limit). */
  private legacyAfter(fromMs: number): IndexRow[] {
    if (!hasTable(this.ctx, "listing")) return [];
    return this.ctx.storage.sql
      .exec<{ run_id: string; created_ms: number; status: string; finished_ms: number | null }>(
        `SELECT run_id, created_ms, status, finished_ms FROM listing WHERE created_ms >= ?
         ORDER BY created_ms, run_id`,
        fromMs,
      )
      .toArray()
      .map((r) => ({ ...(r as unknown as IndexRow) }));
  }

  private async dropShard(): Promise<void> {
    if (this.flushTimer) clearTimeout(this.flushTimer);
    await this.ctx.storage.deleteAll();
    this.buffer = new Map();
    this.written = new Map();
    this.flushTimer = null;
    this.flushAt = null;
    this.seq = -1;
    this.batchesReady = false;
    this.registered = false;
    this.registering = null;
  }

  private hasBatches(): boolean {
    if (!this.batchesReady) this.batchesReady = hasTable(this.ctx, "batches");
    return this.batchesReady;
  }

  private ensureBatches(): void {
    if (this.hasBatches()) return;
    this.ctx.storage.sql.exec(
      `CREATE TABLE IF NOT EXISTS batches (
         slice INTEGER NOT NULL, seq INTEGER NOT NULL, entries TEXT NOT NULL,
         PRIMARY KEY (slice, seq)) WITHOUT ROWID`,
    );
    this.batchesReady = true;
  }

  private shardReady(ref: ShardRef): Promise<void> {
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
    await directoryStub(this.env, ref.workflow, ref.residency ?? null).register(
      ref.bucket,
      ref.shard,
      expires,
    );
    this.ctx.storage.kv.put(REGISTERED_KEY, true);
    await this.ctx.storage.setAlarm(expires);
    this.registered = true;
  }
}

/** The sweep's order: creation time, then run id. */
function sweepKey(r: IndexRow): string {
  return `${String(r.created_ms).padStart(15, "0")}/${r.run_id}`;
}

/** Whether the object's SQLite database has table `name`. */
export function hasTable(ctx: DurableObjectState, name: string): boolean {
  return (
    ctx.storage.sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", name).toArray()
      .length > 0
  );
}
