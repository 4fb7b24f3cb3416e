/**
 * The results table of `npm run bench` and what it derives from the measurements: the ratios,
 * the targets each line is held to, and the formatting of its cells (report.ts writes the page).
 */
import { SHARDS_PER_BUCKET } from "../src/run/listing/listing-layout.ts";
import { roundRatios } from "./cpu.ts";
import type { Samples, Throughput } from "./latency.ts";
import type { Contender, Results, WriteCounts } from "./results-shape.ts";

// ---- targets (issues 5 and 10) -------------------------------------------------------------
export const MAX_RATIO_TO_BARE = 1.25;
export const MIN_SPEEDUP_OVER_WORKFLOWS = 6;
export const MIN_THROUGHPUT_RATIO = 0.8;
export const MAX_ENGINE_US_PER_STEP = 50;
/** A default run at the floor (docs/decisions.md): the 50-workflow bundle no larger than it was before (bench/results.md of 2026-11-28). */
export const MAX_GZIP_KIB = 177.1;
/** A default run at the floor (docs/decisions.md): loading and evaluating the Worker's module, locally. */
export const MAX_STARTUP_MS = 60;
/** A default run at the floor (docs/decisions.md): what a finished default 10-step run keeps (its rows' keys and values). */
export const MAX_STORED_KIB = 4;
/** A default run at the floor (docs/decisions.md): a default 10-step run, per million, at list prices. */
export const MAX_USD_PER_MILLION = 2;
/** A default run at the floor (docs/decisions.md): the 10-step run's p50 net through `wrangler dev`, against the bare DO's. */
export const MAX_RATIO_TO_BARE_DEV = 1;
/** docs/operations.md: a finished transform run writes at most 3 rows to its own object, whatever its length. */
export const MAX_ROWS_PER_RUN = 3;
/** The arithmetic in docs/operations.md: 10,000 invokes/s, at most 2 listing writes per run, 32 shards. */
export const INVOKES_PER_S = 10_000;
/** docs/operations.md: under load (≥ 50 runs a second of one workflow) the listing writes at most this. */
export const MAX_LISTING_ROWS_PER_RUN = 0.1;
/** At any load (the whole bench, sequential phases included) a run costs the listing at most this. */
export const MAX_LISTING_ROWS_PER_RUN_ANY = 1.2;
export const MAX_LISTING_WRITES_PER_RUN = 2;
/** A default run at the floor (docs/decisions.md): workerd CPU per 10-step run (default and express) at most this multiple of the bare Durable Object's. */
export const MAX_CPU_RATIO_TO_BARE = 1.3;
export const SHARD_LOAD_AT_SCALE = (INVOKES_PER_S * MAX_LISTING_WRITES_PER_RUN) / SHARDS_PER_BUCKET;

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

export const ms = (v: number) => (v < 10 ? v.toFixed(2) : v < 100 ? v.toFixed(1) : v.toFixed(0));
export const pp = (s: Samples | undefined) => (s ? `${ms(s.p50)} / ${ms(s.p99)} ms` : "—");
export const us = (v: number) => `${v.toFixed(v < 10 ? 1 : 0)} µs`;
export const kib = (b: number) => `${(b / 1024).toFixed(1)} KiB`;
export const x = (v: number) => `${v.toFixed(2)}x`;
export const verdict = (ok: boolean) => (ok ? "met" : "**MISSED**");

export interface Derived {
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
  /** Rows the listing's objects wrote, per run listed (the whole bench). */
  listingRowsPerRun: number;
  logLinesPerRun: number;
}

export function derive(r: Results): Derived {
  const p = (c: Contender, n: number) => r.latency[c][n]?.p50 ?? Number.NaN;
  const p50 = {
    ours: p("ours", 10),
    unlisted: p("unlisted", 10),
    bare: p("bare", 10),
    workflows: p("workflows", 10),
    express: p("express", 10),
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
    express: p50.express - health,
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
    listingRowsPerRun: r.listedRuns > 0 ? r.indexStats.writes.rows / r.listedRuns : Number.NaN,
    logLinesPerRun: r.oursRuns > 0 ? r.logLines / r.oursRuns : Number.NaN,
  };
}

export function table(r: Results, d: Derived): string {
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
  const cpuRatio = (c: Contender) => (r.cpu?.[c]?.total ?? Number.NaN) / (r.cpu?.bare?.total ?? Number.NaN);
  /** The ratio over every round, and how far single rounds spread (each against the bare DO's block of the same round). */
  const cpuRatioSpread = (c: Contender) => {
    const each = roundRatios(r.cpu?.[c], r.cpu?.bare);
    const spread =
      each.length > 1 ? ` (rounds ${x(each[0] as number)}–${x(each[each.length - 1] as number)})` : "";
    return `${x(cpuRatio(c))}${spread}`;
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
      "  CPU per run / bare DO CPU per run",
      cpuRatioSpread("ours"),
      cpuRatioSpread("unlisted"),
      "1x",
      x(cpuRatio("workflows")),
      `≤ ${MAX_CPU_RATIO_TO_BARE}x`,
      verdict(cpuRatio("ours") <= MAX_CPU_RATIO_TO_BARE),
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
      "express run (history: failures), 10 steps: p50 / p99; net / bare DO net",
      `${pp(r.latency.express[10])}; ${x(d.net.express / d.net.bare)}`,
      "",
      "1x",
      "",
      "≤ 1x",
      verdict(d.net.express / d.net.bare <= 1),
    ],
    [
      "express run: workerd CPU; rows and setAlarm calls in its object",
      `${cpu("express")}; ${r.expressWrites.rows} rows, ${r.expressWrites.alarms} setAlarm`,
      "",
      "",
      "",
      "0 rows, 0 setAlarm",
      verdict(r.expressWrites.rows === 0 && r.expressWrites.alarms === 0),
    ],
    [
      "  express run: CPU per run / bare DO CPU per run",
      cpuRatioSpread("express"),
      "",
      "1x",
      "",
      `≤ ${MAX_CPU_RATIO_TO_BARE}x`,
      verdict(cpuRatio("express") <= MAX_CPU_RATIO_TO_BARE),
    ],
    [
      `listing rows written per run, one workflow at ${r.listingAtLoad.runsPerSecond.toFixed(0)} runs/s (64 clients)`,
      (r.listingAtLoad.rows / Math.max(1, r.listingAtLoad.runs)).toFixed(3),
      "",
      "",
      "",
      `≤ ${MAX_LISTING_ROWS_PER_RUN} at ≥ 50 runs/s`,
      verdict(
        r.listingAtLoad.runsPerSecond >= 50 &&
          r.listingAtLoad.rows / Math.max(1, r.listingAtLoad.runs) <= MAX_LISTING_ROWS_PER_RUN,
      ),
    ],
    [
      "listing rows written per run (all runs of the bench, sequential phases too)",
      d.listingRowsPerRun.toFixed(3),
      "0",
      "",
      "",
      `≤ ${MAX_LISTING_ROWS_PER_RUN_ANY}`,
      verdict(d.listingRowsPerRun <= MAX_LISTING_ROWS_PER_RUN_ANY),
    ],
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
      "default run, 10 steps: rows and setAlarm calls in its object",
      r.writes[10] ? `${classify(r.writes[10]).data} rows, ${r.writes[10].alarms} setAlarm` : "—",
      "",
      "",
      "",
      "1 row, 0 setAlarm",
      verdict(!!r.writes[10] && classify(r.writes[10]).data === 1 && r.writes[10].alarms === 0),
    ],
    [
      "storage per finished 10-step run: its rows (keys + values); its SQLite database",
      r.writes[10] ? `${kib(r.writes[10].dataBytes ?? 0)}; ${kib(r.writes[10].bytes ?? 0)}` : "—",
      "",
      r.bareWrites[10]?.bytes ? `; ${kib(r.bareWrites[10].bytes)}` : "",
      "",
      `≤ ${MAX_STORED_KIB} KiB (rows)`,
      verdict(
        !!r.writes[10] && (r.writes[10].dataBytes ?? Number.POSITIVE_INFINITY) <= MAX_STORED_KIB * 1024,
      ),
    ],
    [
      "a default 10-step run, USD per million (cost table below)",
      r.defaultUsdPerMillion === undefined ? "—" : `$${r.defaultUsdPerMillion.toFixed(2)}`,
      "",
      "",
      "",
      `≤ $${MAX_USD_PER_MILLION.toFixed(2)}`,
      verdict((r.defaultUsdPerMillion ?? Number.POSITIVE_INFINITY) <= MAX_USD_PER_MILLION),
    ],
    [
      "through wrangler dev (npm start), 10 steps: p50 net of /health / bare DO net",
      devRatio(r) === null ? "—" : x(devRatio(r) as number),
      "",
      "1x",
      "",
      `≤ ${MAX_RATIO_TO_BARE_DEV}x`,
      verdict((devRatio(r) ?? Number.POSITIVE_INFINITY) <= MAX_RATIO_TO_BARE_DEV),
    ],
    [
      `Worker bundle with ${r.bundle.workflows} workflows, gzip`,
      kib(r.bundle.gzipBytes),
      "",
      "",
      "",
      `≤ ${MAX_GZIP_KIB} KiB`,
      verdict(r.bundle.gzipBytes <= MAX_GZIP_KIB * 1024),
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
    [
      "  of which loading + evaluating our module",
      `${ms(s.oursMs - s.emptyMs)} ms`,
      "",
      "",
      "",
      `≤ ${MAX_STARTUP_MS} ms`,
      verdict(s.oursMs - s.emptyMs <= MAX_STARTUP_MS),
    ],
  );
  const widths = rows[0]?.map((_, c) => Math.max(...rows.map((row) => (row[c] ?? "").length))) ?? [];
  const line = (row: string[]) => `| ${row.map((cell, c) => cell.padEnd(widths[c] ?? 0)).join(" | ")} |`;
  const [head, ...body] = rows;
  return [line(head ?? []), `|${widths.map((w) => "-".repeat(w + 2)).join("|")}|`, ...body.map(line)].join(
    "\n",
  );
}

/** The 10-step run's p50 net of /health through `wrangler dev`, over the bare DO's (null: not measured). */
export function devRatio(r: Results): number | null {
  const w = r.wranglerDev;
  return w ? (w.ours - w.health) / (w.bare - w.health) : null;
}
