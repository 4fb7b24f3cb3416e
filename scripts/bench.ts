/**
 * `npm run bench`: our engine side by side with the floor of its architecture (a bare Durable
 * Object per run) and with Cloudflare Workflows, on one local workerd: latency, throughput at 16
 * and 64 clients, workerd CPU per run, the run listing (complete while the bench ran, writes per
 * run, what one shard takes), storage writes per run, bundle size with 50 workflows, Worker
 * startup and a Node-side profile of the engine. Prints one table and writes it, with the machine
 * it ran on, to bench/results.md.
 *
 *   npm run bench                 # about 14 minutes
 *   npm run bench -- --quick      # fewer samples, for checking that the bench itself works
 *
 * Not part of `npm test`: timings depend on the machine. Network: 127.0.0.1 only.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { join } from "node:path";
import { ablationVariants, runAblation } from "../bench/ablation.ts";
import { measureBundleSize, measureStartup } from "../bench/bundle-size.ts";
import { AFTER_RUNS_SETTLE_MS, cpuPerRun } from "../bench/cpu.ts";
import { type BenchServer, ROOT, resultsPath, startBenchServer } from "../bench/dev-server.ts";
import { profileEngine } from "../bench/engine-profile.ts";
import {
  baselineRunner,
  concurrent,
  concurrentRounds,
  interleaved,
  oursRunner,
  type Runner,
} from "../bench/latency.ts";
import { checkListing, type ListingCheck } from "../bench/listing-check.ts";
import { BENCH_PARAMS, buildBenchBundle, EXPRESS_PIPELINE, PIPELINE_SIZES } from "../bench/pipelines.ts";
import {
  type Contender,
  type IndexStats,
  machineInfo,
  type Results,
  renderResults,
  type WriteCounts,
} from "../bench/report.ts";
import { profileWorkerd } from "../bench/workerd-profile.ts";
import { throughWranglerDev } from "../bench/wrangler-dev.ts";
import { FLUSH_WINDOW_MS } from "../src/run/listing/listing-layout.ts";

const quick = process.argv.includes("--quick");
const SAMPLES = quick ? 30 : 150;
const WARMUP = quick ? 5 : 20;
const CONCURRENCY = [16, 64] as const;
const THROUGHPUT_S = quick ? 1 : 3;
const THROUGHPUT_ROUNDS = quick ? 1 : 2;
const CPU_ROUNDS = quick ? 1 : 4;
/**
 * Runs per CPU block: the block is counted with the quiet after it (CPU_SETTLE_MS), and what
 * workerd does while quiet is estimated, so the runs must outweigh that estimate's error.
 */
const CPU_BLOCK = quick ? 15 : 400;
/** Throughput rounds end with this much quiet, so one contender's leftovers do not slow the next. */
const SETTLE_MS = 2_500;
/**
 * A CPU block ends with this much quiet, so that what its runs leave behind (their shards'
 * batches, their guard alarms) is counted with them (an earlier bench waited 2.5 s, and charged the
 * alarms of ours to the contenders after it).
 */
const CPU_SETTLE_MS = quick ? 2_500 : AFTER_RUNS_SETTLE_MS;
const UNLISTED = "/bench/unlisted";

const tmp = join(ROOT, "bench/tmp");
const log = (s: string) => process.stderr.write(`${s}\n`);

/**
 * `fn` on a workerd process of its own, stopped afterwards. CPU is measured there: the bench's
 * main server holds thousands of objects from the phases before, and their evictions land in
 * whichever block is being measured. Its storage is in memory (tmpfs) where there is one: each run
 * creates a database file, and this machine's disk made that cost wander by milliseconds between
 * blocks (Cloudflare has no such file per object).
 */
async function onFreshServer<T>(name: string, fn: (server: BenchServer) => Promise<T>): Promise<T> {
  const state = existsSync("/dev/shm") ? `/dev/shm/workflow-edge-bench-${name}` : null;
  const server = await startBenchServer(join(tmp, name), {}, state);
  try {
    return await fn(server);
  } finally {
    await server.stop();
    if (state) rmSync(state, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const t0 = performance.now();
  const machine = await machineInfo();
  mkdirSync(tmp, { recursive: true });

  log("compiling the bench pipelines (1, 10, 50 transform steps) with our compiler");
  const { bundle } = buildBenchBundle(tmp);

  log("bundling bench/entry.ts (wrangler deploy --dry-run) and starting it in workerd on 127.0.0.1");
  let server: BenchServer | null = await startBenchServer(tmp);
  const stopServer = async () => {
    const s = server;
    server = null;
    if (s) await s.stop();
  };
  for (const sig of ["SIGINT", "SIGTERM"] as const) {
    process.once(sig, () => void stopServer().finally(() => process.exit(130)));
  }

  let results: Omit<
    Results,
    "bundle" | "startup" | "wranglerDev" | "engine" | "machine" | "totalS" | "quick"
  >;
  try {
    const base = server.url;
    // Every run of ours with the listing on, by id: the listing must show each of them once.
    const listed = new Set<string>();
    const keep = (id: string) => listed.add(id);
    let oursRuns = 0;
    let listedRuns = 0;
    const counted =
      (run: Runner, listing: boolean): Runner =>
      async () => {
        await run();
        oursRuns += 1;
        if (listing) listedRuns += 1;
      };
    // The listing check reads bench-10's listing: the ids of the 10-step runs are the ones kept.
    const ours = (n: number) => counted(oursRunner(base, n, n === 10 ? keep : undefined), true);
    const unlisted = (n: number) => counted(oursRunner(base, n, undefined, UNLISTED), false);
    const bare = (n: number) => baselineRunner(base, "bare", n);
    const workflows = () => baselineRunner(base, "workflows", 10);
    const express = () => counted(oursRunner(base, 10, undefined, "", EXPRESS_PIPELINE), true);

    const runners: Array<readonly [string, Runner]> = [];
    for (const n of PIPELINE_SIZES) runners.push([`ours/${n}`, ours(n)], [`bare/${n}`, bare(n)]);
    runners.push(["unlisted/10", unlisted(10)], ["workflows/10", workflows()], ["express/10", express()]);
    // The fixed cost of a request on this server, interleaved with the runs it is subtracted from.
    runners.push([
      "health/0",
      async () => {
        const res = await fetch(`${base}/health`);
        await res.text();
      },
    ]);
    log(
      `latency: ${runners.length} series interleaved, ${SAMPLES} sequential runs each after ${WARMUP} warm-up`,
    );
    const samples = await interleaved(runners, WARMUP, SAMPLES);
    const latency: Results["latency"] = { ours: {}, unlisted: {}, bare: {}, workflows: {}, express: {} };
    let health: Results["health"] | null = null;
    for (const [key, s] of samples) {
      if (key === "health/0") {
        health = s;
        continue;
      }
      const [kind, n] = key.split("/") as [Contender, string];
      latency[kind][Number(n)] = s;
    }
    if (!health) throw new Error("no /health samples");

    const throughput: Results["throughput"] = [];
    for (const c of CONCURRENCY) {
      // Bare first: it leaves nothing behind, and ours takes what "listing off" left (the same).
      const contenders: Array<readonly [Contender, Runner]> = [
        ["bare", bare(10)],
        ["unlisted", unlisted(10)],
        ["ours", ours(10)],
        ["express", express()],
      ];
      // Workflows takes seconds per run at 64 clients; 16 shows its level.
      if (c === 16) contenders.push(["workflows", workflows()]);
      log(`throughput: ${c} concurrent clients, ${THROUGHPUT_ROUNDS} rounds of ${THROUGHPUT_S} s each`);
      const tp = await concurrentRounds(contenders, c, THROUGHPUT_S, THROUGHPUT_ROUNDS, SETTLE_MS);
      throughput.push({ concurrency: c, results: Object.fromEntries(tp) });
    }

    log("listing at load: one workflow, 64 clients, then its shards' flush window");
    // The entries of the phases before are written first (their shards' flush window), so the
    // rows counted are the load's own; long enough that most shards write more than one batch.
    await new Promise((r) => setTimeout(r, FLUSH_WINDOW_MS + 1_500));
    const statsBefore = await getJson<IndexStats>(`${base}/bench/index-stats`);
    const load = await concurrent(ours(10), 64, quick ? 2 : 20);
    // Every entry of the load is written once its shard's flush window (8 s) has passed.
    await new Promise((r) => setTimeout(r, FLUSH_WINDOW_MS + 1_500));
    const statsAfter = await getJson<IndexStats>(`${base}/bench/index-stats`);
    const listingAtLoad = {
      runs: load.runs,
      runsPerSecond: load.runsPerSecond,
      rows: statsAfter.writes.rows - statsBefore.writes.rows,
    };

    log("run listing: every run of ours listed exactly once, and how soon");
    const listing: ListingCheck = await checkListing(base, "bench-10", listed, quick ? 20_000 : 30_000);
    const indexStats = await getJson<IndexStats>(`${base}/bench/index-stats`);
    log("one listing shard: thousands of single-run writes in flight");
    const capacity = await shardCapacity(base, quick ? 4 : 10, 400);
    // Counted at the same moment (the CPU phase below makes more runs).
    const logLines = server.runLogLines();
    const runsBeforeCheck = { oursRuns, listedRuns };

    // CPU is measured on workerd processes of its own: the one above holds thousands of objects
    // from the phases before, and their evictions land in whichever block is being measured. Their
    // storage is in memory (tmpfs) where there is one: each run creates a database file, and this
    // machine's disk made that cost wander by milliseconds between blocks (Cloudflare has no such
    // file per object).
    let cpu: Results["cpu"] = null;
    log(
      `CPU per run: a new workerd, user + system time from /proc, ${CPU_ROUNDS} alternating blocks of ${CPU_BLOCK}`,
    );
    await onFreshServer("cpu", async (fresh) => {
      const b = fresh.url;
      const contenders: Array<readonly [string, Runner]> = [
        ["ours", oursRunner(b, 10)],
        ["unlisted", oursRunner(b, 10, undefined, UNLISTED)],
        ["bare", baselineRunner(b, "bare", 10)],
        ["workflows", baselineRunner(b, "workflows", 10)],
        ["express", oursRunner(b, 10, undefined, "", EXPRESS_PIPELINE)],
      ];
      // Warm code, and every listing shard of the hour created before anything is counted.
      for (let i = 0; i < (quick ? 5 : 100); i++) for (const [, run] of contenders) await run();
      if (fresh.pid !== null)
        cpu = Object.fromEntries(
          await cpuPerRun(fresh.pid, contenders, CPU_ROUNDS, CPU_BLOCK, CPU_SETTLE_MS),
        );
    });
    log(
      "ablation: each part of a run switched off in turn, the bare floor with each part added (a new workerd)",
    );
    const ablation = await onFreshServer("ablation", (fresh) =>
      runAblation(ablationVariants(fresh.url, 10), fresh.pid, {
        samples: quick ? 20 : 60,
        cpuRounds: 1,
        cpuBlock: quick ? 10 : 200,
        settleMs: CPU_SETTLE_MS,
      }),
    );

    log("storage writes per run");
    const writes: Record<number, WriteCounts> = {};
    for (const n of PIPELINE_SIZES) {
      let runId = "";
      await oursRunner(base, n, (id) => (runId = id))();
      writes[n] = await getJson<WriteCounts>(`${base}/bench/writes/${runId}`);
    }
    let expressId = "";
    await oursRunner(base, 10, (id) => (expressId = id), "", EXPRESS_PIPELINE)();
    const expressWrites = await getJson<WriteCounts>(`${base}/bench/writes/${expressId}`);
    const bareWrites: Record<number, WriteCounts> = {};
    for (const n of PIPELINE_SIZES) {
      const res = await fetch(`${base}/bench/bare?steps=${n}`, {
        method: "POST",
        body: JSON.stringify(BENCH_PARAMS),
      });
      bareWrites[n] = ((await res.json()) as { writes: WriteCounts }).writes;
    }
    log("profile: workerd CPU profile over its inspector (ours 10 and 50 steps, bare DO 10 steps)");
    const profileRuns = quick ? 50 : 100;
    const profile = (label: string, run: Runner) =>
      profileWorkerd(label, server?.inspectorPort ?? 0, server?.scriptPath ?? "", run, profileRuns);
    const workerd = [
      await profile("ours, 10 steps", oursRunner(base, 10)),
      await profile("bare DO, 10 steps", bare(10)),
      await profile("ours, 50 steps", oursRunner(base, 50)),
    ];
    results = {
      latency,
      health,
      ablation,
      workerd,
      throughput,
      cpu,
      listing,
      indexStats,
      listingAtLoad,
      ...runsBeforeCheck,
      logLines,
      capacity,
      writes,
      expressWrites,
      bareWrites,
      samples: SAMPLES,
    };
  } finally {
    await stopServer();
  }

  log(`bundle size: 50 workflows compiled, wrangler deploy --dry-run, gzip`);
  const bundleSize = measureBundleSize(join(tmp, "fifty"));
  log("startup: fresh workerd (Miniflare) to first /health, ours vs an empty Worker");
  const startup = await measureStartup(bundleSize.scriptPath, join(tmp, "fifty"), quick ? 3 : 9);
  log("through wrangler dev (npm start): the 10-step run and the bare DO, net of /health");
  const wranglerDev = await throughWranglerDev(join(tmp, "wrangler-dev"), quick ? 20 : 150, quick ? 10 : 30);
  log("engine alone in Node: runPipeline with an in-memory host, CPU profile");
  const engine = await profileEngine(bundle);

  machine.loadAtEnd = loadavg()
    .map((l) => l.toFixed(2))
    .join(" / ");
  const all: Results = {
    ...results,
    bundle: bundleSize,
    startup,
    wranglerDev,
    engine,
    machine,
    totalS: (performance.now() - t0) / 1000,
    quick,
  };
  const { table, markdown } = renderResults(all);
  process.stdout.write(`\n${table}\n`);
  writeFileSync(resultsPath("results.md"), markdown);
  log(`\nwritten to bench/results.md (${all.totalS.toFixed(0)} s)`);
  // What compensation, streaming, queues, operators' controls, the protocols and scores cost, each on a workerd of its own, with its own results file.
  for (const phase of ["compensation", "streaming", "queues", "operators", "protocols", "scores"]) {
    log(`\n${phase} phase (npm run bench:${phase})`);
    const done = spawnSync(
      process.execPath,
      [join(ROOT, `bench/${phase}.ts`), ...(quick ? ["--quick"] : [])],
      {
        stdio: ["ignore", "inherit", "inherit"],
      },
    );
    if (done.status !== 0) throw new Error(`the ${phase} phase failed`);
  }
}

/** `senders` requests at once, each putting `each` listing writes in flight into one shard. */
async function shardCapacity(
  base: string,
  senders: number,
  each: number,
): Promise<{ perSecond: number; writes: number; concurrency: number }> {
  const shard = `capacity-${process.pid}`;
  await getJson(`${base}/bench/shard-writes?shard=${shard}&writes=1&offset=999999`); // registration
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: senders }, (_, k) =>
      getJson(`${base}/bench/shard-writes?shard=${shard}&writes=${each}&offset=${k * each}`),
    ),
  );
  const ms = performance.now() - t0;
  return { perSecond: ((senders * each) / ms) * 1000, writes: senders * each, concurrency: senders * each };
}

async function getJson<T>(url: string): Promise<T> {
  const res = await fetch(url);
  if (!res.ok) throw new Error(`${url}: HTTP ${res.status}`);
  return (await res.json()) as T;
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? (err.stack ?? err.message) : err);
  process.exit(1);
});
