/**
 * What operators' controls cost (`npm run bench:operators`; docs/http-api.md, "Search keys";
 * docs/triggers.md, "Schedules on demand"), on one local workerd (Miniflare) serving
 * bench/entry.ts:
 *
 * - Rows written per run by a workflow with `search:` (three keys) and by the same workflow
 *   without: the run's own object and the listing's shards (target: the same).
 * - The cron handler's time for an event that finds a due entry of a workflow with a schedule,
 *   paused (one read of its schedule object, no run), against an event no entry is due at (no
 *   read at all): p50 of the handler's round trip, and the difference.
 *
 *   npm run bench:operators               # 200 runs each, 200 cron events each
 *   npm run bench:operators -- --quick    # 30
 *
 * Writes bench/operators-results.md. Not part of `npm test`. Network: 127.0.0.1 only.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { machineLine, ROOT, resultsPath } from "./dev-server.ts";
import { median } from "./latency.ts";
import { rowsWritten, startOwnWorker } from "./own-bundle.ts";

const quick = process.argv.includes("--quick");
const N = quick ? 30 : 200;
const tmp = join(ROOT, "bench/tmp/operators");
const log = (s: string) => process.stderr.write(`${s}\n`);

const workflow = (name: string, search: boolean, schedule: boolean) => `kind: workflow
name: ${name}
params:
  schema: { type: object, properties: { customer: { type: string }, region: { type: string }, order: { type: integer } } }
${search ? 'search:\n  customer: "{{ params.customer }}"\n  region: "{{ params.region }}"\n  order: "{{ params.order }}"\n' : ""}${schedule ? 'schedule:\n  - cron: "*/5 * * * *"\n    params: { customer: c0 }\n' : ""}pipeline:
  - id: a
    transform: { inputs: [{ from: "{{ params }}" }], ops: [] }
  - id: b
    transform: { inputs: [{ from: "{{ step.a.result }}" }], ops: [] }
`;

async function main(): Promise<void> {
  mkdirSync(tmp, { recursive: true });
  log("compiling the operators bench workflows and bundling bench/entry.ts");
  const mf = await startOwnWorker(
    tmp,
    {
      "ops-plain.workflow.yaml": workflow("ops-plain", false, false),
      "ops-search.workflow.yaml": workflow("ops-search", true, false),
      "ops-cron.workflow.yaml": workflow("ops-cron", false, true),
      "wrangler.toml": '[triggers]\ncrons = ["*/5 * * * *"]\n',
    },
    { LISTING_FLUSH_MS: "100", LISTING_RIDE_MS: "off", AFTER_ANSWER_MS: "0" },
    {
      durableObjects: {
        RUNS: { className: "CountingRunObject", useSQLite: true },
        RUN_INDEX: { className: "CountingRunIndex", useSQLite: true },
        BARE_RUNS: { className: "BareRunObject", useSQLite: true },
        SCHEDULES: { className: "ScheduleState", useSQLite: true },
      },
    },
  );
  try {
    const base = (await mf.ready).origin;
    const json = async (path: string, init?: RequestInit) => (await fetch(`${base}${path}`, init)).json();
    const indexRows = async () =>
      ((await json("/bench/index-stats")) as { writes: { rows: number } }).writes.rows;
    const settle = () => new Promise((r) => setTimeout(r, 1500));

    /** N runs of `name`: the run objects' rows (median) and the listing's rows per run. */
    const runs = async (name: string) => {
      await settle();
      const before = await indexRows();
      const ids: string[] = [];
      for (let i = 0; i < N; i++) {
        const e = (await json(`/invoke/${name}`, {
          method: "POST",
          headers: { "content-type": "application/json", prefer: "wait=10" },
          body: JSON.stringify({ customer: `c${i % 7}`, region: i % 2 ? "eu" : "us", order: i }),
        })) as { run_id: string; status: string };
        if (e.status !== "complete") throw new Error(`${name}: a run ended ${e.status}`);
        ids.push(e.run_id);
      }
      await settle();
      const listing = ((await indexRows()) - before) / N;
      const own = median(await Promise.all(ids.slice(-20).map((id) => rowsWritten(base, id))));
      return { own, listing };
    };
    log(`rows: ${N} runs without and with search keys`);
    const plain = await runs("ops-plain");
    const searched = await runs("ops-search");
    /** Listing rows per entry, for 5 × 100 entries written into fresh shards at once. */
    const shardRows = async (search: boolean) => {
      await settle();
      const before = await indexRows();
      for (let k = 0; k < 5; k++) {
        await json(
          `/bench/shard-writes?shard=ops-${search ? "s" : "p"}-${k}-${process.pid}&writes=100${search ? "&search=1" : ""}`,
        );
      }
      await settle();
      return ((await indexRows()) - before) / 500;
    };
    const plainEntries = await shardRows(false);
    const searchEntries = await shardRows(true);

    log(`cron handler: ${N} events with nothing due, ${N} with a paused entry due`);
    await fetch(`${base}/workflows/ops-cron/schedules/0/pause`, { method: "POST" });
    const time = (cron: string, t: number) => async () => {
      const t0 = performance.now();
      const r = (await json(`/bench/cron?cron=${encodeURIComponent(cron)}&time=${t}`)) as { started: number };
      return { ms: performance.now() - t0, started: r.started };
    };
    const nothing: number[] = [];
    const paused: number[] = [];
    for (let i = 0; i < N; i++) {
      const at = Date.UTC(2031, 0, 1, 0, 5 * i, 0);
      // Interleaved, so both see the same machine; a cron no entry lists, and the entry's own.
      nothing.push((await time("0 3 * * *", at)()).ms);
      const p = await time("*/5 * * * *", at)();
      if (p.started !== 1) throw new Error("the paused workflow's event did not finish");
      paused.push(p.ms);
    }
    const f = (n: number) => n.toFixed(2);
    const machine = machineLine();
    const md = `# What operators' controls cost

\`npm run bench:operators\` (bench/operators.ts) on ${new Date().toISOString().slice(0, 10)}${quick ? " (--quick)" : ""}:
one local workerd (Miniflare) serving bench/entry.ts.

| | without | with | target |
|---|---:|---:|---|
| rows written per run by its object (median of 20; two transform steps; \`search:\` with three keys) | ${plain.own} | ${searched.own} | the same: ${plain.own === searched.own ? "met" : "NOT met"} |
| listing rows written per entry, 500 entries written 100 at a time into fresh shards | ${f(plainEntries)} | ${f(searchEntries)} | the same: ${plainEntries === searchEntries ? "met" : "NOT met"} |
| listing rows written per run, the runs above one after another (batching varies with timing) | ${f(plain.listing)} | ${f(searched.listing)} | |
| the cron handler for one event, p50 round trip (${N} events each): nothing due / a paused entry due (one read of its schedule object) | ${f(median(nothing))} ms | ${f(median(paused))} ms | the read: ${f(median(paused) - median(nothing))} ms |

Search values ride in the run document and in the listing entry's packed row, so they add bytes,
not rows. The cron handler reads a workflow's schedule object only when one of its entries is due
at the event's time; a workflow without a schedule, or with nothing due, costs it nothing.
Machine: ${machine}.
`;
    writeFileSync(resultsPath("operators-results.md"), md);
    process.stdout.write(md);
  } finally {
    await mf.dispose();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
