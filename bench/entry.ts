/**
 * Bench Worker entry: our app, run objects and run index, plus the two baselines the bench
 * compares them with, all in one Worker so that they share one workerd and one machine.
 *
 * - `/invoke/...` and the rest of our API go to the real app, unchanged. `RUNS` is bound to
 *   `CountingRunObject`, our RunObject with a counter of the SQLite rows it writes, read back
 *   through `/bench/writes/{run_id}`; `RUN_INDEX` to `CountingRunIndex`, which counts the run
 *   listing's traffic (`/bench/index-stats`); `/bench/shard-writes` loads one shard.
 * - `/bench/unlisted/invoke/...`: the same app with the listing switched off (UnlistedRunObject),
 *   to show what the listing write costs.
 * - `/bench/bare?steps=N`: the floor of this architecture. One Durable Object per run that does
 *   N trivial transforms and INSERTs each step's output, then answers.
 * - `/bench/workflows?steps=N&poll_ms=P`: Cloudflare Workflows. `BENCH_WF.create()`, then poll
 *   `instance.status()` every P ms until complete, as a Workflows user does; one `step.do` per step.
 *
 * Every path outside `/bench/` belongs to the app, so the bench measures the same routing a user
 * of `npm start` gets.
 */
import { DurableObject, WorkflowEntrypoint, type WorkflowEvent, type WorkflowStep } from "cloudflare:workers";
import { app } from "../src/app.ts";
import { FlowKey } from "../src/run/keys/flow-keys.ts";
import { LISTING_GUARD_MS } from "../src/run/lifecycle/run-plan.ts";
import { type IndexRow, type RecordAnswer, recordRun } from "../src/run/listing/listing.ts";
import { BUCKET_MS, type ShardRef } from "../src/run/listing/listing-layout.ts";
import { RunIndex } from "../src/run/listing/run-index.ts";
import { RunObject } from "../src/run/object/run-object.ts";
import { runSchedules } from "../src/triggers/cron/schedule.ts";
import { consumeBatch } from "../src/triggers/queue/queue.ts";

interface BenchEnv {
  RUNS: DurableObjectNamespace;
  RUNS_UNLISTED: DurableObjectNamespace;
  RUNS_NOALARM: DurableObjectNamespace;
  RUNS_NOLOG: DurableObjectNamespace;
  RUN_INDEX: DurableObjectNamespace;
  BARE_RUNS: DurableObjectNamespace<BareRunObject>;
  BENCH_WF: Workflow<BenchParams>;
  /** The queue `npm run bench:queues` sends to (its own Miniflare only). */
  BENCH_QUEUE?: Queue<unknown>;
}

export { DefinitionStore } from "../src/run/definitions/definition-store.ts";
/** The payload every pipeline transforms: a few order lines, each step bumps `n`. */
// Keyed signals as deployed; flow keys counted (npm run bench:bursts reads what they write).
export { SignalKey } from "../src/run/keys/signal-keys.ts";
// Paused schedule entries (npm run bench:operators times the cron handler's read of them).
export { ScheduleState } from "../src/triggers/cron/schedule-state.ts";

export interface Item {
  id: string;
  n: number;
}
interface BenchParams {
  steps: number;
  items: Item[];
}

/** Rows written by every `sql.exec` of one object, by statement (first 40 characters). */
export interface WriteCount {
  rows: number;
  alarms: number;
  byStatement: Record<string, number>;
}

/**
 * Wraps `ctx.storage.sql.exec` and `setAlarm` of one object to count what it writes. The cursor's
 * `rowsWritten` is read right after `exec`: our writes are single statements without RETURNING,
 * which SQLite runs to completion inside `exec`.
 */
function countWrites(ctx: DurableObjectState): WriteCount {
  const count: WriteCount = { rows: 0, alarms: 0, byStatement: {} };
  const sql = ctx.storage.sql;
  const exec = sql.exec.bind(sql);
  // Statement keys are computed once per query text: the counter must cost next to nothing.
  const keys = new Map<string, string>();
  sql.exec = ((query: string, ...bindings: unknown[]) => {
    const cursor = exec(query, ...bindings);
    const written = cursor.rowsWritten;
    if (written > 0) {
      count.rows += written;
      let key = keys.get(query);
      if (key === undefined) {
        key = query.replace(/\s+/g, " ").slice(0, 40);
        keys.set(query, key);
      }
      count.byStatement[key] = (count.byStatement[key] ?? 0) + written;
    }
    return cursor;
  }) as typeof sql.exec;
  const kv = ctx.storage.kv;
  const put = kv.put.bind(kv);
  kv.put = (key, value) => {
    count.rows += 1;
    const k = `kv.put ${key.split("/")[0]}`;
    count.byStatement[k] = (count.byStatement[k] ?? 0) + 1;
    put(key, value);
  };
  const del = kv.delete.bind(kv);
  kv.delete = (key) => {
    // A delete is a row written, as billed.
    count.rows += 1;
    const k = `kv.delete ${key.split("/")[0]}`;
    count.byStatement[k] = (count.byStatement[k] ?? 0) + 1;
    return del(key);
  };
  const setAlarm = ctx.storage.setAlarm.bind(ctx.storage);
  ctx.storage.setAlarm = (time, options) => {
    count.alarms += 1;
    return setAlarm(time, options);
  };
  return count;
}

export class CountingRunObject extends RunObject {
  private readonly writes: WriteCount;
  constructor(ctx: DurableObjectState, env: Env) {
    // The counter must be in place before the constructor creates its tables.
    const writes = countWrites(ctx);
    super(ctx, env);
    this.writes = writes;
  }
  /** What the run wrote, and what its object stores now: its SQLite database, and its rows' keys and values (0: nothing). */
  async benchWrites(): Promise<WriteCount & { bytes: number; dataBytes: number }> {
    const rows = [...this.ctx.storage.kv.list<string>()];
    const encoder = new TextEncoder();
    const dataBytes = rows.reduce(
      (n, [k, v]) => n + encoder.encode(k).length + encoder.encode(typeof v === "string" ? v : "").length,
      0,
    );
    return { ...this.writes, bytes: rows.length > 0 ? this.ctx.storage.sql.databaseSize : 0, dataBytes };
  }
}

/** Each flow key's counters, by object id, one per incarnation (workerd evicts an idle object). */
const flowKeyWrites = new Map<string, WriteCount[]>();

/** The flow key object as deployed, with a counter of the rows it writes (npm run bench:bursts). */
export class CountingFlowKey extends FlowKey {
  private readonly id: string;
  constructor(ctx: DurableObjectState, env: Env) {
    const writes = countWrites(ctx);
    super(ctx, env);
    this.id = ctx.id.toString();
    flowKeyWrites.set(this.id, [...(flowKeyWrites.get(this.id) ?? []), writes]);
  }
  /** Rows written by every incarnation of this key so far. */
  async benchWrites(): Promise<{ rows: number }> {
    return { rows: (flowKeyWrites.get(this.id) ?? []).reduce((n, w) => n + w.rows, 0) };
  }
}

/**
 * Our RunObject with the run listing switched off (its listing writes go nowhere): the bench's
 * "ours, listing off" series, which shows what the listing write costs a run. Bench only.
 */
export class UnlistedRunObject extends CountingRunObject {
  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, { ...env, RUN_INDEX: NOWHERE_INDEX });
  }
}

/** A RUN_INDEX whose shards take every write and keep nothing: the listing switched off. */
const NOWHERE_INDEX = (() => {
  const nowhere = { record: async () => {}, recordWritten: async () => {}, forget: async () => {} };
  return { idFromName: (name: string) => name, get: () => nowhere } as unknown as Env["RUN_INDEX"];
})();

/** Ablations for `npm run bench:ablate` (bench only): one part of a run switched off each. */
export class NoAlarmRunObject extends UnlistedRunObject {
  constructor(ctx: DurableObjectState, env: Env) {
    ctx.storage.setAlarm = async () => {};
    ctx.storage.deleteAlarm = async () => {};
    super(ctx, env);
  }
}
export class NoLogRunObject extends UnlistedRunObject {
  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    // The run object's effects (src/run/object/run-effects.ts, its private logFinished) write the
    // run.finished line.
    const effects = (this as unknown as { effects?: { logFinished?: () => void } }).effects;
    if (!effects || typeof effects.logFinished !== "function")
      throw new Error("RunEffects.logFinished is gone: fix the ablation");
    effects.logFinished = () => {};
  }
}

/** Listing traffic of every RunIndex object of this isolate (local workerd runs them all in one). */
export interface IndexStats {
  /** `record` calls (one per listing write of a run) and the rows they carried */
  records: number;
  recordedRows: number;
  /** directory registrations (a shard's first write) */
  registrations: number;
  /** SQLite rows written by all index objects, by statement */
  writes: WriteCount;
}
const indexStats: IndexStats = {
  records: 0,
  recordedRows: 0,
  registrations: 0,
  writes: { rows: 0, alarms: 0, byStatement: {} },
};
/** Every RunIndex object's own counter (a shard writes its batches later, from a timer). */
const indexWrites: WriteCount[] = [];

/** The totals so far, every object's counter summed. */
function currentIndexStats(): IndexStats {
  const writes: WriteCount = { rows: 0, alarms: 0, byStatement: {} };
  for (const w of indexWrites) {
    writes.rows += w.rows;
    writes.alarms += w.alarms;
    for (const [k, v] of Object.entries(w.byStatement))
      writes.byStatement[k] = (writes.byStatement[k] ?? 0) + v;
  }
  return { ...indexStats, writes };
}

export class CountingRunIndex extends RunIndex {
  constructor(ctx: DurableObjectState, env: Env) {
    const writes = countWrites(ctx);
    super(ctx, env);
    indexWrites.push(writes);
  }
  override async record(ref: ShardRef, rows: IndexRow[], confirm = false): Promise<RecordAnswer> {
    indexStats.records += 1;
    indexStats.recordedRows += rows.length;
    return super.record(ref, rows, confirm);
  }
  /** An express run's entry, carried by the Worker (one listing write, like `record`). */
  override async recordWritten(ref: ShardRef, rows: IndexRow[]): Promise<void> {
    indexStats.records += 1;
    indexStats.recordedRows += rows.length;
    return super.recordWritten(ref, rows);
  }
  override async register(bucket: number, shard: number, expiresMs: number): Promise<void> {
    indexStats.registrations += 1;
    return super.register(bucket, shard, expiresMs);
  }
}

function bump(items: Item[]): Item[] {
  return items.map((it) => ({ id: it.id, n: it.n + 1 }));
}

/** The hand-written floor: one object per run, one INSERT per step, nothing else. */
export class BareRunObject extends DurableObject<Env> {
  private readonly writes: WriteCount;
  constructor(ctx: DurableObjectState, env: Env) {
    const writes = countWrites(ctx);
    super(ctx, env);
    this.writes = writes;
  }
  override async alarm(): Promise<void> {}
  async run(params: BenchParams, extra: string[] = []): Promise<{ result: Item[]; writes: WriteCount }> {
    const sql = this.ctx.storage.sql;
    // Ablations (`npm run bench:ablate`): what a deadline alarm, a log line or a listing write
    // costs the floor.
    if (extra.includes("alarm")) void this.ctx.storage.setAlarm(Date.now() + 2000);
    // Set once the answer has left, deleted soon after (what an unguarded listing write would pay).
    if (extra.includes("alarmlate")) {
      setTimeout(() => void this.ctx.storage.setAlarm(Date.now() + 2000), 0);
      setTimeout(() => void this.ctx.storage.deleteAlarm(), 50);
    }
    const createdAt = new Date().toISOString();
    if (extra.length > 0)
      setTimeout(async () => {
        if (extra.includes("log"))
          console.log(JSON.stringify({ event: "bare.finished", steps: params.steps }));
        // The listing write a run makes after answering (its shard's RPC), as ours does; the
        // alarm that guards it is deleted once the shard has it.
        if (extra.includes("listing"))
          await recordRun(this.env, {
            run_id: this.ctx.id.toString(),
            workflow: "bench-bare",
            status: "complete",
            created_at: createdAt,
            finished_at: new Date().toISOString(),
          }).catch(() => {});
        if (extra.includes("alarm")) void this.ctx.storage.deleteAlarm();
      }, 0);
    const kv = extra.includes("kv") ? this.ctx.storage.kv : null;
    if (!kv) sql.exec("CREATE TABLE IF NOT EXISTS step (i INTEGER PRIMARY KEY, output TEXT NOT NULL)");
    let items = params.items;
    for (let i = 0; i < params.steps; i++) {
      items = bump(items);
      if (kv) kv.put(`step/${i}`, JSON.stringify({ result: items }));
      else sql.exec("INSERT INTO step (i, output) VALUES (?, ?)", i, JSON.stringify({ result: items }));
    }
    // Ours' guard of a finished run's listing entry: armed with the last write, fires once, later.
    if (extra.includes("guard")) void this.ctx.storage.setAlarm(Date.now() + LISTING_GUARD_MS);
    return { result: items, writes: this.writes };
  }
}

/** The same pipeline as a Cloudflare Workflow: every step is a durable `step.do`. */
export class BenchWorkflow extends WorkflowEntrypoint<BenchEnv, BenchParams> {
  override async run(event: WorkflowEvent<BenchParams>, step: WorkflowStep): Promise<{ result: Item[] }> {
    let items = event.payload.items;
    for (let i = 0; i < event.payload.steps; i++) {
      const input = items;
      items = await step.do(`s${i + 1}`, async () => bump(input));
    }
    return { result: items };
  }
}

async function runWorkflow(env: BenchEnv, params: BenchParams, pollMs: number): Promise<Response> {
  const instance = await env.BENCH_WF.create({ params });
  for (;;) {
    const s = await instance.status();
    if (s.status === "complete") return Response.json({ status: s.status, output: s.output ?? null });
    if (s.status === "errored" || s.status === "terminated") {
      return Response.json({ status: s.status, error: s.error ?? null }, { status: 500 });
    }
    await new Promise((r) => setTimeout(r, pollMs));
  }
}

/**
 * Listing writes into one shard: `writes` single-run `record` calls (what a run sends), all in
 * flight at once, into the shard named `shard` (the bench sends several of these requests at
 * once, each under the Worker's subrequest limit, so the shard sees thousands in flight). The
 * sender shares workerd's one thread with the shard here, so the rate is a floor for a shard of
 * its own.
 */
async function shardWrites(env: BenchEnv, url: URL): Promise<Response> {
  const writes = Number.parseInt(url.searchParams.get("writes") ?? "500", 10);
  const offset = Number.parseInt(url.searchParams.get("offset") ?? "0", 10);
  const withSearch = url.searchParams.get("search") === "1";
  const now = Date.now();
  const ref: ShardRef = {
    workflow: url.searchParams.get("shard") ?? "capacity",
    bucket: Math.floor(now / BUCKET_MS),
    shard: 0,
  };
  const shard = env.RUN_INDEX.get(
    env.RUN_INDEX.idFromName(`${ref.workflow}\n${ref.bucket}\n${ref.shard}`),
  ) as unknown as CountingRunIndex;
  await Promise.all(
    Array.from({ length: writes }, (_, k) => {
      const i = offset + k;
      return shard.record(ref, [
        {
          run_id: i.toString(16).padStart(64, "0"),
          created_ms: now + i,
          status: "complete",
          finished_ms: now + i,
          // `search=1`: the entry carries three search values (npm run bench:operators).
          ...(withSearch ? { search: { customer: `c${i % 7}`, region: "eu", order: String(i) } } : {}),
        },
      ]);
    }),
  );
  return Response.json({ writes });
}

async function benchRoute(req: Request, env: BenchEnv, url: URL): Promise<Response> {
  const steps = Number.parseInt(url.searchParams.get("steps") ?? "10", 10);
  if (url.pathname === "/bench/bare" || url.pathname === "/bench/workflows") {
    const items = (await req.json()) as { items: Item[] };
    const params: BenchParams = { steps, items: items.items };
    if (url.pathname === "/bench/workflows") {
      return runWorkflow(env, params, Number.parseInt(url.searchParams.get("poll_ms") ?? "1", 10));
    }
    const stub = env.BARE_RUNS.get(env.BARE_RUNS.newUniqueId());
    const extra = (url.searchParams.get("with") ?? "").split(",").filter((x) => x);
    return Response.json(await stub.run(params, extra));
  }
  const writes = /^\/bench\/writes\/([0-9a-f]{64})$/.exec(url.pathname);
  if (writes?.[1]) {
    const stub = env.RUNS.get(env.RUNS.idFromString(writes[1])) as unknown as CountingRunObject;
    return Response.json(await stub.benchWrites());
  }
  if (url.pathname === "/bench/flow-writes") {
    const ns = (env as unknown as { FLOW_KEYS: DurableObjectNamespace }).FLOW_KEYS;
    const stub = ns.get(ns.idFromName(url.searchParams.get("name") ?? "")) as unknown as CountingFlowKey;
    return Response.json(await stub.benchWrites());
  }
  if (url.pathname === "/bench/queue-send" && env.BENCH_QUEUE) {
    // What a producer Worker does: one sendBatch per 100 messages (the Queues limit per call).
    const bodies = (await req.json()) as unknown[];
    for (let i = 0; i < bodies.length; i += 100) {
      await env.BENCH_QUEUE.sendBatch(bodies.slice(i, i + 100).map((body) => ({ body })));
    }
    return Response.json({ sent: bodies.length });
  }
  if (url.pathname === "/bench/cron") {
    // The cron handler as deployed, for one event (npm run bench:operators times it from outside).
    const scheduledTime = Number(url.searchParams.get("time") ?? Date.now());
    const started = await runSchedules(
      { cron: url.searchParams.get("cron") ?? "", scheduledTime },
      env as unknown as Env,
    );
    return Response.json({ started });
  }
  if (url.pathname === "/bench/index-stats") return Response.json(currentIndexStats());
  if (url.pathname === "/bench/shard-writes") return shardWrites(env, url);
  return new Response("no such bench route", { status: 404 });
}

export default {
  fetch(req: Request, env: BenchEnv, ctx: ExecutionContext): Response | Promise<Response> {
    const url = new URL(req.url);
    if (url.pathname.startsWith("/bench/unlisted/")) {
      // The real app, with its runs in UnlistedRunObject: same routing, no listing writes (the
      // Worker carries none either).
      const inner = new Request(new URL(url.pathname.slice("/bench/unlisted".length), url), req);
      return app.fetch(
        inner,
        { ...env, RUNS: env.RUNS_UNLISTED, RUN_INDEX: NOWHERE_INDEX } as unknown as Env,
        ctx,
      );
    }
    const v = /^\/bench\/v\/(\w+)(\/.*)$/.exec(url.pathname);
    if (v) {
      // The ablation's variants of ours are unlisted too (bench/ablation.ts).
      const inner = new Request(new URL(v[2] as string, url), req);
      const ns = (env as unknown as Record<string, unknown>)[`RUNS_${v[1]}`];
      return app.fetch(inner, { ...env, RUNS: ns, RUN_INDEX: NOWHERE_INDEX } as unknown as Env, ctx);
    }
    if (url.pathname.startsWith("/bench/")) return benchRoute(req, env, url);
    return app.fetch(req, env as unknown as Env, ctx);
  },
  // The queue trigger as deployed (npm run bench:queues).
  async queue(batch: MessageBatch<unknown>, env: BenchEnv): Promise<void> {
    await consumeBatch(batch, env as unknown as Env);
  },
};
