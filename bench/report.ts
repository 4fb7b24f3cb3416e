/**
 * Turns the bench's measurements into the one table `npm run bench` prints and the whole of
 * bench/results.md: how to run and read it, the machine, the table with each target and whether
 * it was met, and the notes that explain a miss from the numbers of this very run (storage rows by
 * statement, the engine's hottest functions), so the file never says something the run did not show.
 */
import { readFileSync } from "node:fs";
import { cpus, freemem, loadavg, platform, release, totalmem } from "node:os";
import { join } from "node:path";
import type { BundleSize, Startup } from "./bundle-size.ts";
import { ROOT } from "./dev-server.ts";
import type { EngineProfile } from "./engine-profile.ts";
import { type Samples, type Throughput, WORKFLOW_POLL_MS } from "./latency.ts";
import type { WorkerdProfile } from "./workerd-profile.ts";

export interface WriteCounts {
  rows: number;
  alarms: number;
  byStatement: Record<string, number>;
}

export interface MachineInfo {
  cpu: string;
  cores: number;
  memoryGiB: number;
  freeGiB: number;
  load: string;
  os: string;
  node: string;
  wrangler: string;
  workerd: string;
  date: string;
}

export interface Results {
  latency: {
    ours: Record<number, Samples>;
    bare: Record<number, Samples>;
    workflows: Record<number, Samples>;
  };
  throughput: { ours: Throughput; bare: Throughput; workflows: Throughput };
  /** CPU profiles inside workerd: ours, then the bare baseline. */
  workerd: WorkerdProfile[];
  writes: Record<number, WriteCounts>;
  bareWrites: Record<number, WriteCounts>;
  /** RunIndex rows written by one run (the difference around it). */
  indexWrites: Record<number, WriteCounts>;
  concurrency: number;
  samples: number;
  bundle: BundleSize;
  startup: Startup;
  engine: EngineProfile;
  machine: MachineInfo;
  totalS: number;
  quick: boolean;
}

// ---- targets (issue 5) -------------------------------------------------------------------
const MAX_RATIO_TO_BARE = 1.5;
const MIN_SPEEDUP_OVER_WORKFLOWS = 4;
const MAX_ENGINE_US_PER_STEP = 50;
const MAX_GZIP_KIB = 150;
const MAX_ROWS_OVER_STEPS = 2;

function version(pkg: string): string {
  try {
    return (
      JSON.parse(readFileSync(join(ROOT, "node_modules", pkg, "package.json"), "utf8")) as { version: string }
    ).version;
  } catch {
    return "unknown";
  }
}

export async function machineInfo(): Promise<MachineInfo> {
  const cpu = cpus();
  return {
    cpu: cpu[0]?.model ?? "unknown",
    cores: cpu.length,
    memoryGiB: totalmem() / 2 ** 30,
    freeGiB: freemem() / 2 ** 30,
    load: loadavg()
      .map((l) => l.toFixed(2))
      .join(" / "),
    os: `${platform()} ${release()}`,
    node: process.version,
    wrangler: version("wrangler"),
    workerd: version("workerd"),
    date: new Date().toISOString(),
  };
}

/** Rows are a data write unless they are schema (CREATE) or Miniflare's own bookkeeping. */
export function classify(w: WriteCounts): { data: number; schema: number; internal: number } {
  let data = 0;
  let schema = 0;
  let internal = 0;
  for (const [stmt, n] of Object.entries(w.byStatement)) {
    if (stmt.includes("__miniflare")) internal += n;
    else if (/^\s*create\b/i.test(stmt)) schema += n;
    else data += n;
  }
  return { data, schema, internal };
}

export function diffWrites(after: WriteCounts, before: WriteCounts): WriteCounts {
  const byStatement: Record<string, number> = {};
  for (const [k, v] of Object.entries(after.byStatement)) {
    const d = v - (before.byStatement[k] ?? 0);
    if (d !== 0) byStatement[k] = d;
  }
  return { rows: after.rows - before.rows, alarms: after.alarms - before.alarms, byStatement };
}

const ms = (v: number) => (v < 10 ? v.toFixed(2) : v < 100 ? v.toFixed(1) : v.toFixed(0));
const pp = (s: Samples | undefined) => (s ? `${ms(s.p50)} / ${ms(s.p99)} ms` : "—");
const us = (v: number) => `${v.toFixed(v < 10 ? 1 : 0)} µs`;
const kib = (b: number) => `${(b / 1024).toFixed(1)} KiB`;
const verdict = (ok: boolean) => (ok ? "met" : "**MISSED**");

interface Derived {
  ratioToBare: number;
  speedupOverWorkflows: number;
  oursPerStepUs: number;
  barePerStepUs: number;
  engineBeyondStorageUs: number;
  rowsOk: boolean;
  aboveFloor: { ours: number; workflows: number };
}

function derive(r: Results): Derived {
  const o1 = r.latency.ours[1]?.p50 ?? Number.NaN;
  const o10 = r.latency.ours[10]?.p50 ?? Number.NaN;
  const o50 = r.latency.ours[50]?.p50 ?? Number.NaN;
  const b1 = r.latency.bare[1]?.p50 ?? Number.NaN;
  const b10 = r.latency.bare[10]?.p50 ?? Number.NaN;
  const b50 = r.latency.bare[50]?.p50 ?? Number.NaN;
  const w10 = r.latency.workflows[10]?.p50 ?? Number.NaN;
  const oursPerStepUs = ((o50 - o1) / 49) * 1000;
  const barePerStepUs = ((b50 - b1) / 49) * 1000;
  const rowsOk = Object.entries(r.writes).every(
    ([n, w]) => classify(w).data <= Number(n) + MAX_ROWS_OVER_STEPS,
  );
  return {
    ratioToBare: o10 / b10,
    speedupOverWorkflows: w10 / o10,
    oursPerStepUs,
    barePerStepUs,
    engineBeyondStorageUs: oursPerStepUs - barePerStepUs,
    rowsOk,
    aboveFloor: { ours: o10 - b10, workflows: w10 - b10 },
  };
}

function table(r: Results, d: Derived): string {
  const sizes = [1, 10, 50];
  const rowsOf = (w: Record<number, WriteCounts>) =>
    sizes
      .map((n) => {
        const c = w[n] ? classify(w[n]) : null;
        return c ? `${c.data}` : "—";
      })
      .join(" / ");
  const schemaOf = (w: Record<number, WriteCounts>) =>
    sizes.map((n) => (w[n] ? classify(w[n]).schema : "—")).join(" / ");
  const tp = (t: Throughput) => `${t.runsPerSecond.toFixed(0)} runs/s (p50 ${ms(t.latency.p50)} ms)`;
  const s = r.startup;
  const rows: string[][] = [
    ["measure", "ours", "bare DO", "Workflows", "target", "result"],
    ["invoke latency, 1 step, p50 / p99", pp(r.latency.ours[1]), pp(r.latency.bare[1]), "—", "", ""],
    [
      "invoke latency, 10 steps, p50 / p99",
      pp(r.latency.ours[10]),
      pp(r.latency.bare[10]),
      pp(r.latency.workflows[10]),
      "",
      "",
    ],
    ["invoke latency, 50 steps, p50 / p99", pp(r.latency.ours[50]), pp(r.latency.bare[50]), "—", "", ""],
    [
      "10 steps: ours p50 / bare DO p50",
      `${d.ratioToBare.toFixed(2)}x`,
      "1x",
      "",
      `≤ ${MAX_RATIO_TO_BARE}x`,
      verdict(d.ratioToBare <= MAX_RATIO_TO_BARE),
    ],
    [
      "10 steps: Workflows p50 / ours p50",
      `${d.speedupOverWorkflows.toFixed(1)}x faster`,
      "",
      "1x",
      `≥ ${MIN_SPEEDUP_OVER_WORKFLOWS}x faster`,
      verdict(d.speedupOverWorkflows >= MIN_SPEEDUP_OVER_WORKFLOWS),
    ],
    [
      "10 steps: p50 above the bare-DO floor (p50 − bare p50)",
      `${ms(d.aboveFloor.ours)} ms`,
      "0",
      `${ms(d.aboveFloor.workflows)} ms`,
      "",
      "",
    ],
    [
      `throughput, 10 steps, ${r.concurrency} concurrent clients`,
      tp(r.throughput.ours),
      tp(r.throughput.bare),
      tp(r.throughput.workflows),
      "",
      "",
    ],
    ["cost per extra step: (p50(50) − p50(1)) / 49", us(d.oursPerStepUs), us(d.barePerStepUs), "", "", ""],
    [
      "engine overhead per step beyond storage (ours − bare)",
      us(d.engineBeyondStorageUs),
      "",
      "",
      `< ${MAX_ENGINE_US_PER_STEP} µs`,
      verdict(d.engineBeyondStorageUs < MAX_ENGINE_US_PER_STEP),
    ],
    ["engine alone in Node (no workerd, no storage), per step", us(r.engine.usPerStep), "", "", "", ""],
    [
      "SQLite rows written per run, 1 / 10 / 50 steps",
      rowsOf(r.writes),
      rowsOf(r.bareWrites),
      "n/a",
      `≤ steps + ${MAX_ROWS_OVER_STEPS} (3 / 12 / 52)`,
      verdict(d.rowsOk),
    ],
    [
      "  + schema rows (CREATE TABLE, once per run object)",
      schemaOf(r.writes),
      schemaOf(r.bareWrites),
      "",
      "",
      "",
    ],
    [
      `Worker bundle with ${r.bundle.workflows} workflows, gzip`,
      kib(r.bundle.gzipBytes),
      "",
      "",
      `< ${MAX_GZIP_KIB} KiB`,
      verdict(r.bundle.gzipBytes < MAX_GZIP_KIB * 1024),
    ],
    [
      "startup: new workerd → first /health (median)",
      `${ms(s.oursMs)} ms`,
      `${ms(s.emptyMs)} ms (empty Worker)`,
      "",
      "",
      "",
    ],
    ["  of which loading + evaluating our module", `${ms(s.oursMs - s.emptyMs)} ms`, "", "", "", ""],
  ];
  const widths = rows[0]?.map((_, c) => Math.max(...rows.map((row) => (row[c] ?? "").length))) ?? [];
  const line = (row: string[]) => `| ${row.map((cell, c) => cell.padEnd(widths[c] ?? 0)).join(" | ")} |`;
  const [head, ...body] = rows;
  return [line(head ?? []), `|${widths.map((w) => "-".repeat(w + 2)).join("|")}|`, ...body.map(line)].join(
    "\n",
  );
}

function writesNote(title: string, w: WriteCounts | undefined): string {
  if (!w) return "";
  const lines = Object.entries(w.byStatement)
    .sort((a, b) => b[1] - a[1])
    .map(([stmt, n]) => `  - ${n} × \`${stmt}…\``);
  return [`- ${title}: ${w.rows} rows, ${w.alarms} setAlarm`, ...lines].join("\n");
}

/** Explanations chosen by what this run measured. */
function findings(r: Results, d: Derived): string[] {
  const out: string[] = [];
  const w10 = r.writes[10];
  const stepInserts = Object.entries(w10?.byStatement ?? {}).find(([s]) => /into step/i.test(s))?.[1] ?? 0;
  if (!d.rowsOk && stepInserts >= 2 * 10) {
    out.push(
      `Storage rows: each step record costs ${stepInserts / 10} rows, not 1. A TEXT primary key on a rowid table is a separate index b-tree (\`sqlite_autoindex_step_1\`) and its entry counts as a row written (Durable Objects bill it too). Fix: \`CREATE TABLE … step (path TEXT PRIMARY KEY, doc TEXT NOT NULL) WITHOUT ROWID\` in src/run/run-object.ts.`,
    );
  } else if (d.rowsOk) {
    out.push(
      "Storage rows: one KV row per finished step plus the run document written at start and at the end: steps + 2. Runs use the synchronous KV API of SQLite-backed objects, so a new run object creates no schema (the bare baseline's CREATE TABLE shows as its schema rows). Each run also sets its alarm twice (deadline at start, retention at the end).",
    );
  }
  const [ours, bare] = r.workerd;
  if (ours && bare) {
    const first = (p: WorkerdProfile) => p.lines[0];
    out.push(
      `Where a run's time goes inside workerd (CPU profile, 10 steps): ours keeps the isolate busy ${ms(ours.busyMsPerRun)} ms per run, the bare baseline ${ms(bare.busyMsPerRun)} ms (the sampler inflates both). In both, the largest item is the worker's call into a brand-new Durable Object (ours ${ms(first(ours)?.msPerRun ?? 0)} ms at \`${first(ours)?.where ?? "?"}\`, bare ${ms(first(bare)?.msPerRun ?? 0)} ms): creating the object and its SQLite database, which local workerd does on disk, attributed to the calling line. Our engine and shell (src/engine, src/run, hono) are small next to it.`,
    );
    const index = ours.lines.find((l) => /← add in src\/run\/run-index\.ts/.test(l.where));
    if (index && index.msPerRun > 0.6) {
      out.push(
        `The run index costs ${ms(index.msPerRun)} ms of SQLite per run (\`${index.where}\`). RunIndex.add (src/run/run-index.ts) trims with \`DELETE … WHERE run_id NOT IN (SELECT … ORDER BY created_at DESC LIMIT 200)\`, a scan and sort of the whole table; it should run once per 50 adds, not per invoke (on every invoke it cost 1.2-2 ms per run here). It is off the response path (waitUntil) but shares the isolate, and the index is one object per workflow, a hot spot under load.`,
      );
    }
    const open = ours.lines.find((l) =>
      /exec \(native\) ← \(anonymous\) in src\/run\/run-object\.ts/.test(l.where),
    );
    const bareExec = bare.lines.find((l) => /^exec \(native\)/.test(l.where));
    if (open && bareExec) {
      out.push(
        `Opening a new run object costs ${ms(open.msPerRun)} ms of SQLite in RunObject's constructor (the first statements on a fresh database: two CREATE TABLE and a SELECT, inside blockConcurrencyWhile), against ${ms(bareExec.msPerRun)} ms for all of the bare baseline's SQLite (one CREATE TABLE and 10 INSERTs). It is the largest cost of ours that the baseline does not share. DDL alone does not explain it: giving the baseline the same second table and SELECT added about 0.25 ms in a separate experiment.`,
      );
    }
  }
  if (d.ratioToBare > MAX_RATIO_TO_BARE) {
    out.push(
      `Latency vs bare DO is ${d.ratioToBare.toFixed(2)}x, over the target. The gap is a per-run fixed cost (compare the 1-step rows), not a per-step one: ours also routes through Hono, validates params.schema, registers the run in its workflow's index, writes the run document (definition included) twice, sets two alarms, and builds, masks and serializes the envelope.`,
    );
  }
  if (d.speedupOverWorkflows < MIN_SPEEDUP_OVER_WORKFLOWS) {
    out.push(
      `Workflows is ${d.speedupOverWorkflows.toFixed(1)}x slower than ours, under the 4x target. Locally both pay the same dominant cost, a new Durable Object with a new SQLite file per run (Workflows: per instance), which compresses the ratio: ours minus the bare floor is ${ms((r.latency.ours[10]?.p50 ?? 0) - (r.latency.bare[10]?.p50 ?? 0))} ms, Workflows minus the floor is ${ms((r.latency.workflows[10]?.p50 ?? 0) - (r.latency.bare[10]?.p50 ?? 0))} ms. The status polling every ${WORKFLOW_POLL_MS} ms adds at most that much to Workflows.`,
    );
  }
  if (d.engineBeyondStorageUs >= MAX_ENGINE_US_PER_STEP) {
    const o50 = r.workerd[2];
    const growth =
      ours && o50
        ? Object.entries(o50.allLines)
            .map(([where, m]) => ({ where, us: ((m - (ours.allLines[where] ?? 0)) / 40) * 1000 }))
            .sort((a, b) => b.us - a.us)
            .slice(0, 6)
            .map((g) => `${us(g.us)} \`${g.where}\``)
            .join("; ")
        : "";
    out.push(
      `Per-step overhead beyond storage is ${us(d.engineBeyondStorageUs)}, over the ${MAX_ENGINE_US_PER_STEP} µs target. The engine alone costs ${us(r.engine.usPerStep)} per step in Node, so most of it is in the Durable Object shell around it. What grows per step between the 10- and 50-step profiles (isolate time per extra step): ${growth}. The slope is the difference of two p50s divided by 49, so it moves by ±20 µs between runs.`,
    );
  }
  return out;
}

function profileNote(p: WorkerdProfile): string {
  const mods = p.modules.map((m) => `${m.where} ${ms(m.msPerRun)} ms`).join(", ");
  const lines = p.lines.map(
    (l) => `  - ${ms(l.msPerRun)} ms (${(l.share * 100).toFixed(0)}%) \`${l.where}\``,
  );
  return [
    `- ${p.label}, ${p.runs} runs, ${ms(p.busyMsPerRun)} ms busy per run. By module: ${mods}.`,
    ...lines,
  ].join("\n");
}

export function renderResults(r: Results): { table: string; markdown: string } {
  const d = derive(r);
  const t = table(r, d);
  const m = r.machine;
  const hot = r.engine.hot.map((h) => `  - ${(h.share * 100).toFixed(1)}% ${h.fn}`).join("\n");
  const markdown = `# Benchmark results

Produced by \`npm run bench\` (scripts/bench.ts); this file is rewritten on every run. Not part of
\`npm test\`. Everything runs on this machine, on 127.0.0.1 only.

## How to run and read it

\`npm run bench\` (under 2 minutes; \`npm run bench -- --quick\` for a smoke run) compiles three
transform pipelines of 1, 10 and 50 steps (bench/pipelines.ts) with our compiler, bundles
bench/wrangler.bench.toml with \`wrangler deploy --dry-run\` and serves it from one local workerd
(Miniflare, the engine under \`wrangler dev\` minus its extra proxy hop; storage on disk in
bench/tmp/state). That one Worker (bench/entry.ts) holds all three contenders:

- **ours**: the real app, RunObject and RunIndex, invoked with \`POST /invoke/bench-N\` and
  \`Prefer: wait=30\` (the answer is the finished envelope);
- **bare DO**: one Durable Object per run doing the same transforms with one INSERT per step and
  nothing else, the floor of this architecture;
- **Workflows**: a Cloudflare \`WorkflowEntrypoint\` with one \`step.do\` per step, started with
  \`env.BENCH_WF.create()\` and polled with \`instance.status()\` every ${WORKFLOW_POLL_MS} ms until complete.

All three do the same work on the same payload, and every answer is checked. Reading the table:

- *invoke latency*: wall time of one HTTP request from Node, one at a time, ${r.samples} samples per
  series after warm-up; the seven series are interleaved round-robin so drift hits all alike.
- *throughput*: ${r.concurrency} clients in a loop; completed runs per second and the p50 latency under
  that load; the three contenders take turns, several rounds each.
- *cost per extra step*: the slope between the 1- and 50-step p50s. *Engine overhead beyond
  storage* subtracts the bare baseline's slope (its per-step cost is a transform and an INSERT).
- *SQLite rows written*: the sum of \`rowsWritten\` of every \`sql.exec\` of the run's object
  (bench/entry.ts wraps it), data rows; the schema rows on the next line; alarms in the notes.
- *bundle*: the example workflows copied under ${r.bundle.workflows} names, compiled, bundled by
  \`wrangler deploy --dry-run\`, the script gzipped with node:zlib.
- *startup*: a fresh workerd (Miniflare) started on that bundled script until \`/health\` answers,
  against an empty Worker with the same bindings; the difference is the cost of loading and
  evaluating our module. A local figure: the edge's cold start is a different thing.
- *engine alone in Node*: \`runPipeline\` with an in-memory host, no workerd and no storage.
- Below the table: notes derived from this run, storage rows by statement, and CPU profiles taken
  inside workerd over its inspector (which line or native call the isolate's time goes to).
- On a shared or busy machine timings move by tens of percent between runs (see the load below);
  compare ratios, not absolutes.

## Machine

${m.cpu}, ${m.cores} cores, ${m.memoryGiB.toFixed(1)} GiB memory (${m.freeGiB.toFixed(1)} GiB free), load average at start ${m.load}
${m.os}, Node ${m.node}, wrangler ${m.wrangler}, workerd ${m.workerd}; ${m.date}; ${r.totalS.toFixed(0)} s${r.quick ? " (--quick: few samples)" : ""}

## Results

${t}

## Notes from this run

${findings(r, d)
  .map((f) => `- ${f}`)
  .join("\n")}

Storage writes by statement (one run of each size; the bare baseline for comparison):

${writesNote("ours, 10 steps", r.writes[10])}
${writesNote("ours, 50 steps", r.writes[50])}
${writesNote("bare DO, 10 steps", r.bareWrites[10])}
${writesNote("RunIndex (per-workflow listing, off the response path), one 10-step run", r.indexWrites[10])}

CPU profile inside workerd (bench/workerd-profile.ts, over the inspector; self time per run, by
source line of the bundled Worker or native function; \`exec\` is SQLite):

${r.workerd.map(profileNote).join("\n")}

Bundle: ${kib(r.bundle.scriptBytes)} script (${r.bundle.wranglerSays}); the compiled bundle.json of
${r.bundle.workflows} workflows is ${kib(r.bundle.bundleJsonBytes)} before bundling.

Engine alone in Node (bench/engine-profile.ts: \`runPipeline\` with an in-memory host that serializes
each record like the Durable Object does): ${us(r.engine.us1)} per 1-step run, ${us(r.engine.us50)} per
50-step run. Hottest functions (self time) in the 50-step run:

${hot}
`;
  return { table: t, markdown };
}
