/**
 * Turns the bench's measurements into the one table `npm run bench` prints and the whole of
 * bench/results.md: how to run and read it, the machine, the table with each target and whether
 * it was met, and the notes that explain a miss from the numbers of this very run (storage rows by
 * statement, the engine's hottest functions), so the file never says something the run did not show.
 */
import { readFileSync } from "node:fs";
import { cpus, freemem, loadavg, platform, release, totalmem } from "node:os";
import { join } from "node:path";
import { FLUSH_MS, SHARDS_PER_BUCKET } from "../src/run/listing-layout.ts";
import { type AblationRow, renderAblation } from "./ablation.ts";
import type { BundleSize, Startup } from "./bundle-size.ts";
import { costPerMillion, renderCost } from "./cost.ts";
import type { CpuPerRun } from "./cpu.ts";
import { ROOT } from "./dev-server.ts";
import type { EngineProfile } from "./engine-profile.ts";
import { type Samples, type Throughput, WORKFLOW_POLL_MS } from "./latency.ts";
import type { ListingCheck } from "./listing-check.ts";
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
  /** filled in when the bench ends */
  loadAtEnd?: string;
  os: string;
  node: string;
  wrangler: string;
  workerd: string;
  date: string;
}

/** The four ways a 10-step pipeline runs in the bench. */
export type Contender = "ours" | "unlisted" | "bare" | "workflows";

export interface IndexStats {
  records: number;
  recordedRows: number;
  registrations: number;
  writes: WriteCounts;
}

export interface Results {
  /** p50/p99 by contender and pipeline size (unlisted and workflows: 10 steps only) */
  latency: Record<Contender, Record<number, Samples>>;
  /** GET /health on the same server, interleaved with the runs: the fixed HTTP cost of a request */
  health: Samples;
  /** 10 steps: parts of ours switched off, parts added to the bare floor (bench/ablation.ts) */
  ablation: AblationRow[];
  throughput: Array<{ concurrency: number; results: Partial<Record<Contender, Throughput>> }>;
  /** workerd CPU (user + system) per 10-step run, null when /proc could not be read */
  cpu: Partial<Record<Contender, CpuPerRun>> | null;
  listing: ListingCheck;
  indexStats: IndexStats;
  /** runs of ours (listing on or off) the bench made before the listing check */
  oursRuns: number;
  /** of those, with the listing on (every pipeline size) */
  listedRuns: number;
  /** `run.finished` log lines the Worker wrote by then */
  logLines: number;
  capacity: { perSecond: number; writes: number; concurrency: number };
  /** CPU profiles inside workerd: ours 10, bare 10, ours 50. */
  workerd: WorkerdProfile[];
  writes: Record<number, WriteCounts>;
  bareWrites: Record<number, WriteCounts>;
  samples: number;
  bundle: BundleSize;
  startup: Startup;
  engine: EngineProfile;
  machine: MachineInfo;
  totalS: number;
  quick: boolean;
}

// ---- targets (issues 5 and 10) -------------------------------------------------------------
const MAX_RATIO_TO_BARE = 1.25;
const MIN_SPEEDUP_OVER_WORKFLOWS = 6;
const MIN_THROUGHPUT_RATIO = 0.8;
const MAX_ENGINE_US_PER_STEP = 50;
const MAX_GZIP_KIB = 150;
/** docs/operations.md: a finished transform run writes at most 3 rows to its own object, whatever its length. */
const MAX_ROWS_PER_RUN = 3;
/** The arithmetic in docs/operations.md: 10,000 invokes/s, at most 2 listing writes per run, 32 shards. */
export const INVOKES_PER_S = 10_000;
const MAX_LISTING_WRITES_PER_RUN = 2;
const SHARD_LOAD_AT_SCALE = (INVOKES_PER_S * MAX_LISTING_WRITES_PER_RUN) / SHARDS_PER_BUCKET;

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

const ms = (v: number) => (v < 10 ? v.toFixed(2) : v < 100 ? v.toFixed(1) : v.toFixed(0));
const pp = (s: Samples | undefined) => (s ? `${ms(s.p50)} / ${ms(s.p99)} ms` : "—");
const us = (v: number) => `${v.toFixed(v < 10 ? 1 : 0)} µs`;
const kib = (b: number) => `${(b / 1024).toFixed(1)} KiB`;
const x = (v: number) => `${v.toFixed(2)}x`;
const verdict = (ok: boolean) => (ok ? "met" : "**MISSED**");

interface Derived {
  /** p50 net of a /health round trip on the same server: the work, without the fixed HTTP cost */
  net: Record<Contender, number>;
  health: number;
  p50: Record<Contender, number>;
  ratioToBare: number;
  unlistedRatioToBare: number;
  speedupOverWorkflows: number;
  /** throughput ratio to bare per concurrency, for ours and unlisted */
  tpRatio: Array<{ concurrency: number; ours: number; unlisted: number }>;
  oursPerStepUs: number;
  barePerStepUs: number;
  engineBeyondStorageUs: number;
  rowsOk: boolean;
  listingWritesPerRun: number;
  logLinesPerRun: number;
}

function derive(r: Results): Derived {
  const p = (c: Contender, n: number) => r.latency[c][n]?.p50 ?? Number.NaN;
  const p50 = {
    ours: p("ours", 10),
    unlisted: p("unlisted", 10),
    bare: p("bare", 10),
    workflows: p("workflows", 10),
  };
  const oursPerStepUs = ((p("ours", 50) - p("ours", 1)) / 49) * 1000;
  const barePerStepUs = ((p("bare", 50) - p("bare", 1)) / 49) * 1000;
  const rowsOk = Object.values(r.writes).every((w) => classify(w).data <= MAX_ROWS_PER_RUN);
  const tpRatio = r.throughput.map((t) => {
    const bare = t.results.bare?.runsPerSecond ?? Number.NaN;
    return {
      concurrency: t.concurrency,
      ours: (t.results.ours?.runsPerSecond ?? Number.NaN) / bare,
      unlisted: (t.results.unlisted?.runsPerSecond ?? Number.NaN) / bare,
    };
  });
  const health = r.health.p50;
  const net = {
    ours: p50.ours - health,
    unlisted: p50.unlisted - health,
    bare: p50.bare - health,
    workflows: p50.workflows - health,
  };
  return {
    p50,
    net,
    health,
    ratioToBare: p50.ours / p50.bare,
    unlistedRatioToBare: p50.unlisted / p50.bare,
    speedupOverWorkflows: p50.workflows / p50.ours,
    tpRatio,
    oursPerStepUs,
    barePerStepUs,
    engineBeyondStorageUs: oursPerStepUs - barePerStepUs,
    rowsOk,
    listingWritesPerRun: r.listedRuns > 0 ? r.indexStats.records / r.listedRuns : Number.NaN,
    logLinesPerRun: r.oursRuns > 0 ? r.logLines / r.oursRuns : Number.NaN,
  };
}

function table(r: Results, d: Derived): string {
  const sizes = [1, 10, 50];
  const rowsOf = (w: Record<number, WriteCounts>) =>
    sizes.map((n) => (w[n] ? `${classify(w[n]).data}` : "—")).join(" / ");
  const schemaOf = (w: Record<number, WriteCounts>) =>
    sizes.map((n) => (w[n] ? classify(w[n]).schema : "—")).join(" / ");
  const tp = (t: Throughput | undefined) =>
    t ? `${t.runsPerSecond.toFixed(0)} runs/s (p50 ${ms(t.latency.p50)} ms)` : "—";
  const cpu = (c: Contender) => {
    const v = r.cpu?.[c];
    return v ? `${ms(v.total)} ms (user ${ms(v.user)}, sys ${ms(v.system)})` : "—";
  };
  const s = r.startup;
  const l = r.listing;
  const rows: string[][] = [
    ["measure", "ours", "ours, listing off", "bare DO", "Workflows", "target", "result"],
    ["invoke latency, 1 step, p50 / p99", pp(r.latency.ours[1]), "", pp(r.latency.bare[1]), "—", "", ""],
    [
      "invoke latency, 10 steps, p50 / p99",
      pp(r.latency.ours[10]),
      pp(r.latency.unlisted[10]),
      pp(r.latency.bare[10]),
      pp(r.latency.workflows[10]),
      "",
      "",
    ],
    ["invoke latency, 50 steps, p50 / p99", pp(r.latency.ours[50]), "", pp(r.latency.bare[50]), "—", "", ""],
    [
      "GET /health p50 (the fixed cost of a request on this server)",
      `${ms(d.health)} ms`,
      "",
      "",
      "",
      "",
      "",
    ],
    [
      "10 steps: p50 / bare DO p50 (raw, fixed HTTP cost included)",
      x(d.ratioToBare),
      x(d.unlistedRatioToBare),
      "1x",
      x(d.p50.workflows / d.p50.bare),
      "",
      "",
    ],
    [
      "10 steps: p50 net of /health / bare DO net",
      x(d.net.ours / d.net.bare),
      x(d.net.unlisted / d.net.bare),
      "1x",
      x(d.net.workflows / d.net.bare),
      `≤ ${MAX_RATIO_TO_BARE}x`,
      verdict(d.net.ours / d.net.bare <= MAX_RATIO_TO_BARE),
    ],
    [
      "10 steps: Workflows net / net (how much faster)",
      `${(d.net.workflows / d.net.ours).toFixed(1)}x faster`,
      `${(d.net.workflows / d.net.unlisted).toFixed(1)}x faster`,
      `${(d.net.workflows / d.net.bare).toFixed(1)}x faster`,
      "1x",
      `≥ ${MIN_SPEEDUP_OVER_WORKFLOWS}x faster`,
      verdict(d.net.workflows / d.net.ours >= MIN_SPEEDUP_OVER_WORKFLOWS),
    ],
    [
      "10 steps: p50 above the bare-DO floor",
      `${ms(d.p50.ours - d.p50.bare)} ms`,
      `${ms(d.p50.unlisted - d.p50.bare)} ms`,
      "0",
      `${ms(d.p50.workflows - d.p50.bare)} ms`,
      "",
      "",
    ],
  ];
  for (const t of r.throughput) {
    const ratio = d.tpRatio.find((q) => q.concurrency === t.concurrency);
    rows.push(
      [
        `throughput, 10 steps, ${t.concurrency} concurrent clients`,
        tp(t.results.ours),
        tp(t.results.unlisted),
        tp(t.results.bare),
        tp(t.results.workflows),
        "",
        "",
      ],
      [
        `  runs/s / bare DO runs/s (${t.concurrency} clients)`,
        x(ratio?.ours ?? Number.NaN),
        x(ratio?.unlisted ?? Number.NaN),
        "1x",
        t.results.workflows
          ? x((t.results.workflows.runsPerSecond ?? 0) / (t.results.bare?.runsPerSecond ?? 1))
          : "",
        `≥ ${MIN_THROUGHPUT_RATIO}x`,
        verdict((ratio?.ours ?? 0) >= MIN_THROUGHPUT_RATIO),
      ],
    );
  }
  rows.push(
    [
      "workerd CPU per run, 10 steps (user + sys)",
      cpu("ours"),
      cpu("unlisted"),
      cpu("bare"),
      cpu("workflows"),
      "",
      "",
    ],
    [
      "run listing after the load: runs listed once, complete",
      `${l.listed} of ${l.expected} (${l.duplicates} twice), ${(l.catchUpMs / 1000).toFixed(1)} s after the last invoke`,
      "",
      "",
      "",
      "all, once, ≤ 10 s",
      verdict(l.complete && l.catchUpMs <= 10_000),
    ],
    [
      "listing writes per run (shard requests / runs)",
      d.listingWritesPerRun.toFixed(2),
      "0",
      "",
      "",
      `≤ ${MAX_LISTING_WRITES_PER_RUN}`,
      verdict(d.listingWritesPerRun <= MAX_LISTING_WRITES_PER_RUN),
    ],
    [
      "one listing shard: writes/s it takes (local, sender on the same thread)",
      `${r.capacity.perSecond.toFixed(0)}/s`,
      "",
      "",
      "",
      `> ${SHARD_LOAD_AT_SCALE.toFixed(0)}/s (10k invokes/s)`,
      verdict(r.capacity.perSecond > SHARD_LOAD_AT_SCALE),
    ],
    [
      "log lines per finished run (run.finished)",
      `${d.logLinesPerRun.toFixed(2)} (${r.logLines} for ${r.oursRuns} runs)`,
      "",
      "",
      "",
      "1",
      verdict(d.logLinesPerRun === 1),
    ],
    [
      "cost per extra step: (p50(50) − p50(1)) / 49",
      us(d.oursPerStepUs),
      "",
      us(d.barePerStepUs),
      "",
      "",
      "",
    ],
    [
      "engine overhead per step beyond storage (ours − bare)",
      us(d.engineBeyondStorageUs),
      "",
      "",
      "",
      `< ${MAX_ENGINE_US_PER_STEP} µs`,
      verdict(d.engineBeyondStorageUs < MAX_ENGINE_US_PER_STEP),
    ],
    ["engine alone in Node (no workerd, no storage), per step", us(r.engine.usPerStep), "", "", "", "", ""],
    [
      "SQLite rows written per run, 1 / 10 / 50 steps",
      rowsOf(r.writes),
      "",
      rowsOf(r.bareWrites),
      "n/a",
      `≤ ${MAX_ROWS_PER_RUN} each`,
      verdict(d.rowsOk),
    ],
    [
      "  + schema rows (CREATE TABLE, once per run object)",
      schemaOf(r.writes),
      "",
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
      "",
      `< ${MAX_GZIP_KIB} KiB`,
      verdict(r.bundle.gzipBytes < MAX_GZIP_KIB * 1024),
    ],
    [
      "startup: new workerd → first /health (median)",
      `${ms(s.oursMs)} ms`,
      "",
      `${ms(s.emptyMs)} ms (empty Worker)`,
      "",
      "",
      "",
    ],
    ["  of which loading + evaluating our module", `${ms(s.oursMs - s.emptyMs)} ms`, "", "", "", "", ""],
  );
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
  return [`- ${title}: ${w.rows} ${w.rows === 1 ? "row" : "rows"}, ${w.alarms} setAlarm`, ...lines].join(
    "\n",
  );
}

/** Explanations chosen by what this run measured. */
function findings(r: Results, d: Derived): string[] {
  const out: string[] = [];
  const above = d.p50.ours - d.p50.bare;
  const listingShare = d.p50.ours - d.p50.unlisted;
  out.push(
    `Above the floor: ours answers ${ms(above)} ms after the bare Durable Object at p50 (10 steps). The listing write, which the run object sends after it has answered, moves that p50 by ${listingShare >= 0 ? "+" : "−"}${ms(Math.abs(listingShare))} ms against the "listing off" column (interleaved series; a few tenths either way are noise): it costs CPU (next note), not latency. The profile below says where the rest goes.`,
  );
  const [oursProfile, bareProfile] = r.workerd;
  if (oursProfile && bareProfile) {
    // Native calls are named by their JavaScript caller; the two "call the new object" lines (the
    // Worker awaiting its run's object) carry the creation of the object and are left out.
    const isCallLine = (w: string) => /start-run\.ts|await stub\.(start|run)\(/.test(w);
    const bareTotal = (w: string) => bareProfile.allLines[w] ?? 0;
    const extra = Object.entries(oursProfile.allLines)
      .filter(([w]) => !isCallLine(w))
      .map(([w, v]) => ({ w, v: v - bareTotal(w) }))
      .filter((e) => e.v > 0.05)
      .sort((a, b) => b.v - a.v)
      .slice(0, 8)
      .map((e) => `${ms(e.v)} ms \`${e.w}\``)
      .join("; ");
    out.push(
      `What remains above the floor, by the profiles below (ours 10 steps minus bare 10 steps, per run, busy time of the isolate, inflated by the sampler alike for both): ${extra}. The biggest items are always the run's storage writes through the KV API (the run document with its definition inside, once, when it ends; the first write to a new object's database pays for creating its table), the one alarm that guards the listing write, the listing write itself (an RPC to its shard), Hono's response and reading the body; the garbage collector's share moves between runs.`,
    );
  }
  if (r.cpu?.ours && r.cpu.bare) {
    const c = r.cpu;
    out.push(
      `CPU: workerd spends ${ms(c.ours?.total ?? 0)} ms per run of ours, ${ms(c.unlisted?.total ?? 0)} ms with the listing off and ${ms(c.bare?.total ?? 0)} ms for the bare baseline (user + system time of the whole process from /proc, so the creation of each run's SQLite database on disk counts; a busy machine moves this far less than wall time). Workflows: ${ms(c.workflows?.total ?? 0)} ms.`,
    );
  }
  const st = r.indexStats;
  out.push(
    `Listing: ${st.records} shard writes for ${r.listedRuns} runs with the listing on (a finished run is written once, with its final status; a run still active ${"2 s"} after it started is written again when it ends), ${st.registrations} shard registrations in the directory, ${st.writes.rows} SQLite rows written by the listing's objects (${st.recordedRows} entries). At ${INVOKES_PER_S.toLocaleString("en")} invokes/s of one workflow and at most ${MAX_LISTING_WRITES_PER_RUN} writes per run, each of the ${SHARDS_PER_BUCKET} shards of the current hour takes ${SHARD_LOAD_AT_SCALE.toFixed(0)} writes/s; one shard took ${r.capacity.perSecond.toFixed(0)} writes/s here (${r.capacity.writes} single-run writes, all in flight at once, sent from the same workerd thread; its batches commit every ${FLUSH_MS} ms).`,
  );
  const netRatio = d.net.ours / d.net.bare;
  if (netRatio > MAX_RATIO_TO_BARE) {
    out.push(
      `Latency net of /health vs the bare DO is ${x(netRatio)}, over the ${MAX_RATIO_TO_BARE}x target (listing off: ${x(d.net.unlisted / d.net.bare)}; raw, fixed HTTP cost included: ${x(d.ratioToBare)}). The gap is a per-run fixed cost (compare the 1-step rows), not a per-step one.`,
    );
  }
  const ab = (k: string) => r.ablation.find((a) => a.key === k);
  const [abOurs, abFloor, abBare, abNoAlarm, abUnlisted] = [
    ab("ours"),
    ab("bare DO + all ours must do"),
    ab("bare DO"),
    ab("ours, listing and alarm off"),
    ab("ours, listing off"),
  ];
  if (abOurs && abFloor && abBare && abNoAlarm && abUnlisted) {
    const cpuX = (a: AblationRow, b: AblationRow) =>
      a.cpu === null || b.cpu === null ? "n/a" : x(a.cpu / b.cpu);
    const netX = (a: AblationRow, b: AblationRow) =>
      a.net === null || b.net === null ? "n/a" : x(a.net / b.net);
    out.push(
      `What limits it (ablation below, its own series, p50 net of /health): switching the alarm off takes ours from ${netX(abUnlisted, abBare)} to ${netX(abNoAlarm, abBare)} of the bare DO (CPU ${cpuX(abUnlisted, abBare)} → ${cpuX(abNoAlarm, abBare)}). A run that finishes before its answer has no deadline alarm; the alarm it keeps guards its listing write, which happens after the answer and must survive an eviction (docs/operations.md, "The deadline alarm"), so it stays. Against the floor of a run that does what ours must (bare DO + all ours must do: its rows through the KV API, the alarm, the run.finished line and the listing write after answering) ours is ${netX(abOurs, abFloor)} at p50 net and ${cpuX(abOurs, abFloor)} in CPU per run: what is left above that is the engine itself (routing, params, masking, the envelope). Locally the first setAlarm on a new object's database costs about a millisecond of CPU (the profile's \`setAlarm (native)\` line); on Cloudflare a SQLite-backed object keeps its alarm in its own database, so we expect it to ride in the same commit as the run document, which the output gate waits for anyway (not measurable here).`,
    );
  }
  const netSpeedup = d.net.workflows / d.net.ours;
  if (netSpeedup < MIN_SPEEDUP_OVER_WORKFLOWS) {
    // The floor of a run with our guarantees, as a multiple of the bare DO (ablation, net).
    const all = ab("bare DO + all ours must do");
    const floorX = all?.net && abBare?.net ? all.net / abBare.net : null;
    const bareSpeedup = d.net.workflows / d.net.bare;
    const floorNote =
      floorX === null
        ? ""
        : ` A run that does what ours must (bare DO + all ours must do, ${x(floorX)} of the bare DO in the ablation) could be at most ${(bareSpeedup / floorX).toFixed(1)}x faster than Workflows here.`;
    out.push(
      `Workflows is ${netSpeedup.toFixed(1)}x slower than ours (net of /health), under the ${MIN_SPEEDUP_OVER_WORKFLOWS}x target; the bare floor itself is ${bareSpeedup.toFixed(1)}x faster than Workflows here: both pay for a new Durable Object with a new SQLite database per run (Workflows: per instance), which locally is a file on disk.${floorNote} Workflows is polled every ${WORKFLOW_POLL_MS} ms.`,
    );
  }
  const allRow = r.ablation.find((a) => a.key === "bare DO + all ours must do");
  const bareRow = r.ablation.find((a) => a.key === "bare DO");
  const floorCpuNote =
    allRow?.cpu && bareRow?.cpu
      ? `; a run that does what ours must (bare DO + all ours must do) spends ${x(allRow.cpu / bareRow.cpu)} the bare DO's CPU in the ablation, so it could reach about ${x(bareRow.cpu / allRow.cpu)} of its throughput`
      : "";
  for (const t of d.tpRatio) {
    if (t.ours < MIN_THROUGHPUT_RATIO) {
      out.push(
        `Throughput at ${t.concurrency} clients is ${x(t.ours)} of the bare baseline's (listing off: ${x(t.unlisted)}), under the ${MIN_THROUGHPUT_RATIO}x target: with every contender saturating the same workerd thread, throughput is the inverse of CPU per run (see the CPU row)${floorCpuNote}.`,
      );
    }
  }
  if (d.engineBeyondStorageUs >= MAX_ENGINE_US_PER_STEP) {
    out.push(
      `Per-step overhead beyond storage is ${us(d.engineBeyondStorageUs)}, over the ${MAX_ENGINE_US_PER_STEP} µs target; the engine alone costs ${us(r.engine.usPerStep)} per step in Node. The slope is the difference of two p50s divided by 49, so it moves by ±20 µs between runs.`,
    );
  }
  return out;
}

function costSection(r: Results, d: Derived): string {
  const rows = r.writes[10] ? classify(r.writes[10]).data : Number.NaN;
  const listingRequests = d.listingWritesPerRun;
  return renderCost(
    costPerMillion({
      rowsPerRun: rows,
      listingRequestsPerRun: listingRequests,
      // A listing write lands in a batch of many runs: about one row per run written.
      listingRowsPerRun:
        r.indexStats.recordedRows > 0 && r.listedRuns > 0 ? r.indexStats.writes.rows / r.listedRuns : 1,
      cpuMsPerRun: r.cpu?.ours?.total ?? Number.NaN,
      activeMsPerRun: Math.max(0, d.net.ours),
      workflowsCpuMsPerRun: r.cpu?.workflows?.total ?? Number.NaN,
      steps: 10,
    }),
  );
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

\`npm run bench\` (about 4.5 minutes; \`npm run bench -- --quick\` for a smoke run) compiles three
transform pipelines of 1, 10 and 50 steps (bench/pipelines.ts) with our compiler, bundles
bench/wrangler.bench.toml with \`wrangler deploy --dry-run\` and serves it from one local workerd
(Miniflare, the engine under \`wrangler dev\` minus its extra proxy hop; storage on disk in
bench/tmp/state). That one Worker (bench/entry.ts) holds all the contenders:

- **ours**: the real app, RunObject and the run listing (RunIndex shards), invoked with
  \`POST /invoke/bench-N\` and \`Prefer: wait=30\` (the answer is the finished envelope); every run
  writes its listing entry after it has answered, as in production;
- **ours, listing off**: the same app and run object with the listing write switched off (bench
  only), to show what the listing costs;
- **bare DO**: one Durable Object per run doing the same transforms with one INSERT per step and
  nothing else, the floor of this architecture;
- **Workflows**: a Cloudflare \`WorkflowEntrypoint\` with one \`step.do\` per step, started with
  \`env.BENCH_WF.create()\` and polled with \`instance.status()\` every ${WORKFLOW_POLL_MS} ms until complete.

All do the same work on the same payload, and every answer is checked. Reading the table:

- *invoke latency*: wall time of one HTTP request from Node, one at a time, ${r.samples} samples per
  series after warm-up; the eight series are interleaved round-robin so drift hits all alike.
- *throughput*: 16 and 64 clients in a loop; completed runs per second and the p50 latency under
  that load; the contenders take turns, several rounds each (Workflows at 16 clients only).
- *workerd CPU per run*: user + system time of the workerd process (/proc) over alternating
  blocks of runs, less what workerd burns idle (measured each round), divided by the runs; what
  a busy machine disturbs least.
- *run listing*: after the load, the bench pages through \`GET /runs?workflow=bench-10\` (100 a
  page, following \`next_cursor\`) until every run of ours it started is listed as complete, and
  checks that none is listed twice. *Listing writes per run* counts the shard requests.
  *One listing shard* puts thousands of single-run writes in flight into one shard at once.
- *cost per extra step*: the slope between the 1- and 50-step p50s. *Engine overhead beyond
  storage* subtracts the bare baseline's slope (its per-step cost is a transform and an INSERT).
- *SQLite rows written*: every row the run's object writes (bench/entry.ts counts \`sql.exec\` rows
  and \`kv.put\` calls), data rows; the schema rows on the next line; alarms in the notes.
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

${m.cpu}, ${m.cores} cores, ${m.memoryGiB.toFixed(1)} GiB memory (${m.freeGiB.toFixed(1)} GiB free), load average at start ${m.load}, at the end ${m.loadAtEnd ?? "?"}
${m.os}, Node ${m.node}, wrangler ${m.wrangler}, workerd ${m.workerd}; ${m.date}; ${r.totalS.toFixed(0)} s${r.quick ? " (--quick: few samples)" : ""}

## Results

${t}

## What one million 10-step runs cost

${costSection(r, d)}

## Notes from this run

${findings(r, d)
  .map((f) => `- ${f}`)
  .join("\n")}

What the gap to the floor is made of (bench/ablation.ts, 10 steps; its own interleaved series
and CPU blocks, fewer samples than the table above; \`npm run bench:ablate\` runs it alone with more):

${renderAblation(r.ablation)}

Storage writes by statement (one run of each size; the bare baseline for comparison):

${writesNote("ours, 10 steps", r.writes[10])}
${writesNote("ours, 50 steps", r.writes[50])}
${writesNote("bare DO, 10 steps", r.bareWrites[10])}
${writesNote(`run listing (all shards and directories, the whole bench: ${r.indexStats.records} writes)`, r.indexStats.writes)}

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
