/**
 * Turns the bench's measurements into the one table `npm run bench` prints and the whole of
 * bench/results.md: how to run and read it, the machine, the table with each target and whether
 * it was met, and the notes that explain a miss from the numbers of this very run (storage rows by
 * statement, the engine's hottest functions), so the file never says something the run did not show.
 */
import { readFileSync } from "node:fs";
import { cpus, freemem, loadavg, platform, release, totalmem } from "node:os";
import { join } from "node:path";
import { LISTING_GUARD_MS } from "../src/run/lifecycle/run-plan.ts";
import { FLUSH_WINDOW_MS, SHARDS_PER_BUCKET } from "../src/run/listing/listing-layout.ts";
import { type AblationRow, renderAblation } from "./ablation.ts";
import { type CostRow, costPerMillion, renderCost } from "./cost.ts";
import type { CpuPerRun } from "./cpu.ts";
import { AFTER_RUNS_SETTLE_MS, roundRatios } from "./cpu.ts";
import { ROOT } from "./dev-server.ts";
import { WORKFLOW_POLL_MS } from "./latency.ts";
import {
  classify,
  type Derived,
  derive,
  INVOKES_PER_S,
  kib,
  MAX_ENGINE_US_PER_STEP,
  MAX_GZIP_KIB,
  MAX_LISTING_WRITES_PER_RUN,
  MAX_RATIO_TO_BARE,
  MAX_STORED_KIB,
  MAX_USD_PER_MILLION,
  MIN_SPEEDUP_OVER_WORKFLOWS,
  MIN_THROUGHPUT_RATIO,
  ms,
  SHARD_LOAD_AT_SCALE,
  table,
  us,
  x,
} from "./report-table.ts";
import type { Contender, MachineInfo, Results, WriteCounts } from "./results-shape.ts";
import type { WorkerdProfile } from "./workerd-profile.ts";

export type { Contender, IndexStats, MachineInfo, Results, WriteCounts } from "./results-shape.ts";

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
      `What remains above the floor, by the profiles below (ours 10 steps minus bare 10 steps, per run, busy time of the isolate, inflated by the sampler alike for both): ${extra}. The biggest items are always the run's storage write through the KV API (the run document, once, when it ends; the first write to a new object's database pays for creating its table), the listing write (an RPC to its shard, from the Worker that answered), Hono's response and reading the body; the garbage collector's share moves between runs.`,
    );
  }
  if (r.cpu?.ours && r.cpu.bare) {
    const c = r.cpu;
    out.push(
      `CPU: workerd spends ${ms(c.ours?.total ?? 0)} ms per run of ours (${x((c.ours?.total ?? 0) / (c.bare?.total ?? 1))} the bare DO's), ${ms(c.unlisted?.total ?? 0)} ms with the listing off, ${ms(c.express?.total ?? 0)} ms per express run (${x((c.express?.total ?? 0) / (c.bare?.total ?? 1))}) and ${ms(c.bare?.total ?? 0)} ms for the bare baseline (user + system time from /proc of a workerd of its own, its storage in memory (tmpfs) where the machine has one, so creating each run's SQLite database counts but this machine's disk does not; a busy machine moves this far less than wall time). Workflows: ${ms(c.workflows?.total ?? 0)} ms. Each block is counted until ${(AFTER_RUNS_SETTLE_MS / 1000).toFixed(1)} s after its last run, so a run's guard alarm (${LISTING_GUARD_MS / 1000} s after its end) and its shard's batch are counted with it; the quiet is estimated and subtracted. ${spreadNote(c)}`,
    );
  }
  const st = r.indexStats;
  out.push(
    `Listing: ${st.records} shard writes for ${r.listedRuns} runs with the listing on (a finished run is written once, with its final status; a run still active ${"2 s"} after it started is written again when it ends), ${st.registrations} shard registrations in the directory, ${st.writes.rows} SQLite rows written by the listing's objects (${st.recordedRows} entries). At ${INVOKES_PER_S.toLocaleString("en")} invokes/s of one workflow and at most ${MAX_LISTING_WRITES_PER_RUN} writes per run, each of the ${SHARDS_PER_BUCKET} shards of the current hour takes ${SHARD_LOAD_AT_SCALE.toFixed(0)} writes/s; one shard took ${r.capacity.perSecond.toFixed(0)} writes/s here (${r.capacity.writes} single-run writes, all in flight at once, sent from the same workerd thread; its batches are written every ${FLUSH_WINDOW_MS / 1000} s).`,
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
    const guard = ab("bare DO + guard alarm");
    const guardNote =
      guard?.cpu != null && abBare.cpu !== null
        ? guard.cpu > abBare.cpu
          ? `${ms(guard.cpu - abBare.cpu)} ms of CPU per run (${cpuX(guard, abBare)})`
          : `nothing this run could measure (${cpuX(guard, abBare)}: within its noise)`
        : "n/a";
    out.push(
      `What limits it (ablation below, its own series, p50 net of /health): a run that finishes before its answer arms no alarm (its listing entry is carried by the Worker that answered it: docs/decisions.md, "A default run at the floor"), so switching the alarm off moves ours from ${netX(abUnlisted, abBare)} to ${netX(abNoAlarm, abBare)} of the bare DO (CPU ${cpuX(abUnlisted, abBare)} → ${cpuX(abNoAlarm, abBare)}): noise; the guard it used to arm, added to the bare DO (armed with its last write, fired once), costs ${guardNote}. Against the floor of a run that does what ours must (bare DO + all ours must do: its rows through the KV API, the run.finished line and the listing write after answering) ours is ${netX(abOurs, abFloor)} at p50 net and ${cpuX(abOurs, abFloor)} in CPU per run: what is left above that is the engine itself (routing, params, masking, the envelope).`,
    );
  }
  out.push(...floorNotes(r));
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
  return renderCost(costRows(r, d));
}

/** What one million 10-step runs cost, by contender, from this run's counts. */
function costRows(r: Results, d: Derived): CostRow[] {
  const w10 = r.writes[10];
  const listingRows = Number.isFinite(d.listingRowsPerRun) ? d.listingRowsPerRun : 1;
  // A listing entry: about 120 bytes in a shard's row.
  const listingBytes = 120;
  const retentionDays = 7;
  const common = {
    listingRequestsPerRun: d.listingWritesPerRun,
    listingRowsPerRun: listingRows,
    listingBytesPerRun: listingBytes,
    retentionDays,
  };
  const ours = {
    ...common,
    rowsPerRun: w10 ? classify(w10).data : Number.NaN,
    alarmsPerRun: w10?.alarms ?? Number.NaN,
    // The guard armed at the run's end fires once (it confirms the listing entry).
    alarmInvocationsPerRun: w10 && w10.alarms > 0 ? 1 : 0,
    storedBytesPerRun: w10?.bytes ?? 0,
    cpuMsPerRun: r.cpu?.ours?.total ?? Number.NaN,
    activeMsPerRun: Math.max(0, d.net.ours),
  };
  const ex = r.expressWrites;
  const express = {
    ...common,
    rowsPerRun: classify(ex).data,
    alarmsPerRun: ex.alarms,
    alarmInvocationsPerRun: ex.alarms > 0 ? 1 : 0,
    storedBytesPerRun: ex.bytes ?? 0,
    cpuMsPerRun: r.cpu?.express?.total ?? Number.NaN,
    activeMsPerRun: Math.max(0, d.net.express),
  };
  return costPerMillion(ours, express, {
    cpuMsPerRun: r.cpu?.workflows?.total ?? Number.NaN,
    steps: 10,
    storedBytesPerRun: w10?.bytes ?? 0,
    activeMsPerRun: Math.max(0, d.net.ours),
  });
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
  r.defaultUsdPerMillion = costRows(r, d)[0]?.usdPerMillion;
  const t = table(r, d);
  const m = r.machine;
  const hot = r.engine.hot.map((h) => `  - ${(h.share * 100).toFixed(1)}% ${h.fn}`).join("\n");
  const markdown = `# Benchmark results

Produced by \`npm run bench\` (scripts/bench.ts); this file is rewritten on every run. Not part of
\`npm test\`. Everything runs on this machine, on 127.0.0.1 only.

## How to run and read it

\`npm run bench\` (about 14 minutes; \`npm run bench -- --quick\` for a smoke run) compiles three
transform pipelines of 1, 10 and 50 steps (bench/pipelines.ts) with our compiler, bundles
bench/wrangler.bench.toml with \`wrangler deploy --dry-run\` and serves it from one local workerd
(Miniflare, the engine under \`wrangler dev\` minus its extra proxy hop; storage on disk in
bench/tmp/state). That one Worker (bench/entry.ts) holds all the contenders:

- **ours**: the real app, RunObject and the run listing (RunIndex shards), invoked with
  \`POST /invoke/bench-N\` and \`Prefer: wait=30\` (the answer is the finished envelope); every run's
  listing entry is sent after the answer, as in production (a run that ended before its answer:
  by the Worker that answered it, from \`waitUntil\`);
- **ours, listing off**: the same app and run object with the listing write switched off, in the
  run's object and in the Worker (bench only), to show what the listing costs;
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
  blocks of runs, each counted until the work its runs leave behind is done (their guard alarms,
  their shards' batches), less what workerd burns idle (measured each round), divided by the
  runs; what a busy machine disturbs least.
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

/** How far the CPU ratio moved between rounds of this bench: how far one figure can be trusted here. */
function spreadNote(c: Partial<Record<Contender, CpuPerRun>>): string {
  const each = roundRatios(c.ours, c.bare);
  if (each.length < 2) return "One round only: no spread to report.";
  const express = roundRatios(c.express, c.bare);
  const range = (a: number[]) => `${x(a[0] as number)} to ${x(a[a.length - 1] as number)}`;
  return `Round by round (${each.length} rounds of ${c.ours?.runs ? c.ours.runs / each.length : "?"} runs, each against the bare DO's block of the same round) ours came to ${range(each)} the bare DO${express.length > 1 ? ` and the express run to ${range(express)}` : ""}: on this machine one block's figure moves that much, so only the whole phase's ratio is held to the target.`;
}

/** What is left of a default run's cost, storage and bundle when their targets (docs/decisions.md, "A default run at the floor") are missed. */
function floorNotes(r: Results): string[] {
  const out: string[] = [];
  const w10 = r.writes[10];
  const dbKiB = (w10?.bytes ?? 0) / 1024;
  const dataKiB = (w10?.dataBytes ?? 0) / 1024;
  if (w10 && dbKiB > MAX_STORED_KIB) {
    out.push(
      `Storage: a finished 10-step run keeps ${dataKiB.toFixed(1)} KiB of rows (keys and values; its definition is its version only: docs/operations.md, "Definitions"; ${dataKiB <= MAX_STORED_KIB ? "within" : "over"} the ${MAX_STORED_KIB} KiB target), and its SQLite database is ${dbKiB.toFixed(1)} KiB: SQLite stores in 4 KiB pages, and a database holding one row has its schema page, its table's root page and, for a value over about 1 KiB, overflow pages (8 KiB for one short row). Cloudflare bills the database's size (an empty one is about 12 KB by its FAQ), so the cost table counts the database, not the rows; what is left is the page floor of one database per run, which only a run that keeps no object of its own (an express run) avoids.`,
    );
  }
  const usd = r.defaultUsdPerMillion;
  if (usd !== undefined && usd > MAX_USD_PER_MILLION) {
    // The parts every default run pays whatever the engine does: its request, its object's request,
    // its one row, its database kept for the retention.
    const storage = ((((w10?.bytes ?? 0) + 120) * 1e6) / 1024 ** 3) * (7 / 30) * 0.2;
    const floor = 0.3 + 0.15 + 1 + storage;
    out.push(
      `Cost: a default 10-step run costs $${usd.toFixed(2)} per million, over the $${MAX_USD_PER_MILLION.toFixed(2)} target (it was $3.97 with the guard alarm and the definition in every run). Of that, $${floor.toFixed(2)} is paid by any run kept in an object of its own: the Worker request ($0.30), the request to its object ($0.15), its one row ($1.00) and its database for 7 days ($${storage.toFixed(2)}, the SQLite page floor above); the rest is CPU, the listing's share of requests and rows, and duration (the cost table). Reaching $2.00 would take a smaller database (one row under about 1 KiB: 8 KiB) and the listing's share under load (${(r.listingAtLoad.rows / Math.max(1, r.listingAtLoad.runs)).toFixed(3)} rows per run at ${r.listingAtLoad.runsPerSecond.toFixed(0)} runs/s) rather than over the whole bench's quiet phases.`,
    );
  }
  if (r.bundle.gzipBytes > MAX_GZIP_KIB * 1024) {
    out.push(
      `Bundle: ${(r.bundle.gzipBytes / 1024).toFixed(1)} KiB gzip with ${r.bundle.workflows} workflows, over the ${MAX_GZIP_KIB} KiB it was before this round: the round's protocols (chat, MCP, A2A), scores and the definition store added code; docs/decisions.md says what would win it back.`,
    );
  }
  return out;
}
