/**
 * Bench Worker entry: our app, run objects and run index, plus the two baselines the bench
 * compares them with, all in one Worker so that they share one workerd and one machine.
 *
 * - `/invoke/...` and the rest of our API go to the real app, unchanged. `RUNS` is bound to
 *   `CountingRunObject`, our RunObject with a counter of the SQLite rows it writes, read back
 *   through `/bench/writes/{run_id}`; `RUN_INDEX` to `CountingRunIndex`, the same for the index.
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
import { RunIndex } from "../src/run/run-index.ts";
import { RunObject } from "../src/run/run-object.ts";

interface BenchEnv {
  RUNS: DurableObjectNamespace;
  RUN_INDEX: DurableObjectNamespace;
  BARE_RUNS: DurableObjectNamespace<BareRunObject>;
  BENCH_WF: Workflow<BenchParams>;
}

/** The payload every pipeline transforms: a few order lines, each step bumps `n`. */
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
  async benchWrites(): Promise<WriteCount> {
    return this.writes;
  }
}

export class CountingRunIndex extends RunIndex {
  private readonly writes: WriteCount;
  constructor(ctx: DurableObjectState, env: Env) {
    const writes = countWrites(ctx);
    super(ctx, env);
    this.writes = writes;
  }
  async benchWrites(): Promise<WriteCount> {
    return this.writes;
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
  async run(params: BenchParams): Promise<{ result: Item[]; writes: WriteCount }> {
    const sql = this.ctx.storage.sql;
    sql.exec("CREATE TABLE IF NOT EXISTS step (i INTEGER PRIMARY KEY, output TEXT NOT NULL)");
    let items = params.items;
    for (let i = 0; i < params.steps; i++) {
      items = bump(items);
      sql.exec("INSERT INTO step (i, output) VALUES (?, ?)", i, JSON.stringify({ result: items }));
    }
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

async function benchRoute(req: Request, env: BenchEnv, url: URL): Promise<Response> {
  const steps = Number.parseInt(url.searchParams.get("steps") ?? "10", 10);
  if (url.pathname === "/bench/bare" || url.pathname === "/bench/workflows") {
    const items = (await req.json()) as { items: Item[] };
    const params: BenchParams = { steps, items: items.items };
    if (url.pathname === "/bench/workflows") {
      return runWorkflow(env, params, Number.parseInt(url.searchParams.get("poll_ms") ?? "1", 10));
    }
    const stub = env.BARE_RUNS.get(env.BARE_RUNS.newUniqueId());
    return Response.json(await stub.run(params));
  }
  const writes = /^\/bench\/writes\/([0-9a-f]{64})$/.exec(url.pathname);
  if (writes?.[1]) {
    const stub = env.RUNS.get(env.RUNS.idFromString(writes[1])) as unknown as CountingRunObject;
    return Response.json(await stub.benchWrites());
  }
  const index = /^\/bench\/index-writes\/([^/]+)$/.exec(url.pathname);
  if (index?.[1]) {
    const name = decodeURIComponent(index[1]);
    const stub = env.RUN_INDEX.get(env.RUN_INDEX.idFromName(name)) as unknown as CountingRunIndex;
    return Response.json(await stub.benchWrites());
  }
  return new Response("no such bench route", { status: 404 });
}

export default {
  fetch(req: Request, env: BenchEnv, ctx: ExecutionContext): Response | Promise<Response> {
    const url = new URL(req.url);
    if (url.pathname.startsWith("/bench/")) return benchRoute(req, env, url);
    return app.fetch(req, env as unknown as Env, ctx);
  },
};
