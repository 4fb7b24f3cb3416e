/**
 * `npm run bench`: our engine side by side with the floor of its architecture (a bare Durable
 * Object per run) and with Cloudflare Workflows, on one local workerd, plus storage writes per
 * run, bundle size with 50 workflows, Worker startup and a Node-side profile of the engine.
 * Prints one table and writes it, with the machine it ran on, to bench/results.md.
 *
 *   npm run bench                 # about 2 minutes
 *   npm run bench -- --quick      # fewer samples, for checking that the bench itself works
 *
 * Not part of `npm test`: timings depend on the machine. Network: 127.0.0.1 only.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { measureBundleSize, measureStartup } from "../bench/bundle-size.ts";
import { type BenchServer, ROOT, startBenchServer } from "../bench/dev-server.ts";
import { profileEngine } from "../bench/engine-profile.ts";
import { baselineRunner, concurrentRounds, interleaved, oursRunner, type Runner } from "../bench/latency.ts";
import { BENCH_PARAMS, buildBenchBundle, PIPELINE_SIZES, pipelineName } from "../bench/pipelines.ts";
import { diffWrites, machineInfo, type Results, renderResults, type WriteCounts } from "../bench/report.ts";
import { profileWorkerd } from "../bench/workerd-profile.ts";

const quick = process.argv.includes("--quick");
const SAMPLES = quick ? 30 : 200;
const WARMUP = quick ? 5 : 20;
const CONCURRENCY = 16;
const THROUGHPUT_S = quick ? 2 : 3;
const THROUGHPUT_ROUNDS = quick ? 1 : 3;

const tmp = join(ROOT, "bench/tmp");
const log = (s: string) => process.stderr.write(`${s}\n`);

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

  let results: Omit<Results, "bundle" | "startup" | "engine" | "machine" | "totalS" | "quick">;
  try {
    const base = server.url;
    const runners: Array<readonly [string, Runner]> = [];
    for (const n of PIPELINE_SIZES) {
      runners.push([`ours/${n}`, oursRunner(base, n)], [`bare/${n}`, baselineRunner(base, "bare", n)]);
    }
    runners.push(["workflows/10", baselineRunner(base, "workflows", 10)]);
    log(
      `latency: ${runners.length} series interleaved, ${SAMPLES} sequential runs each after ${WARMUP} warm-up`,
    );
    const samples = await interleaved(runners, WARMUP, SAMPLES);
    const latency: Results["latency"] = { ours: {}, bare: {}, workflows: {} };
    for (const [key, s] of samples) {
      const [kind, n] = key.split("/") as ["ours" | "bare" | "workflows", string];
      latency[kind][Number(n)] = s;
    }

    log(
      `throughput: ${CONCURRENCY} concurrent clients, ${THROUGHPUT_ROUNDS} rounds of ${THROUGHPUT_S} s each`,
    );
    const tp = await concurrentRounds(
      [
        ["ours", oursRunner(base, 10)],
        ["bare", baselineRunner(base, "bare", 10)],
        ["workflows", baselineRunner(base, "workflows", 10)],
      ],
      CONCURRENCY,
      THROUGHPUT_S,
      THROUGHPUT_ROUNDS,
    );
    const pick = (k: string) => {
      const t = tp.get(k);
      if (!t) throw new Error(`no throughput for ${k}`);
      return t;
    };
    const throughput = { ours: pick("ours"), bare: pick("bare"), workflows: pick("workflows") };

    log("storage writes per run");
    const writes: Record<number, WriteCounts> = {};
    const indexWrites: Record<number, WriteCounts> = {};
    for (const n of PIPELINE_SIZES) {
      const indexBefore = await getJson<WriteCounts>(`${base}/bench/index-writes/${pipelineName(n)}`);
      let runId = "";
      await oursRunner(base, n, (id) => (runId = id))();
      writes[n] = await getJson<WriteCounts>(`${base}/bench/writes/${runId}`);
      // The index is updated off the response path (waitUntil); give it a moment.
      await new Promise((r) => setTimeout(r, 200));
      const indexAfter = await getJson<WriteCounts>(`${base}/bench/index-writes/${pipelineName(n)}`);
      indexWrites[n] = diffWrites(indexAfter, indexBefore);
    }
    const bareWrites: Record<number, WriteCounts> = {};
    for (const n of PIPELINE_SIZES) {
      const res = await fetch(`${base}/bench/bare?steps=${n}`, {
        method: "POST",
        body: JSON.stringify(BENCH_PARAMS),
      });
      bareWrites[n] = ((await res.json()) as { writes: WriteCounts }).writes;
    }
    log("profile: workerd CPU profile over its inspector (ours 10 and 50 steps, bare DO 10 steps)");
    const profileRuns = quick ? 50 : 200;
    const workerd = [
      await profileWorkerd(
        "ours, 10 steps",
        server.inspectorPort,
        server.scriptPath,
        oursRunner(base, 10),
        profileRuns,
      ),
      await profileWorkerd(
        "bare DO, 10 steps",
        server.inspectorPort,
        server.scriptPath,
        baselineRunner(base, "bare", 10),
        profileRuns,
      ),
      await profileWorkerd(
        "ours, 50 steps",
        server.inspectorPort,
        server.scriptPath,
        oursRunner(base, 50),
        profileRuns,
      ),
    ];
    results = {
      latency,
      workerd,
      throughput,
      writes,
      bareWrites,
      indexWrites,
      concurrency: CONCURRENCY,
      samples: SAMPLES,
    };
  } finally {
    await stopServer();
  }

  log(`bundle size: 50 workflows compiled, wrangler deploy --dry-run, gzip`);
  const bundleSize = measureBundleSize(join(tmp, "fifty"));
  log("startup: fresh workerd (Miniflare) to first /health, ours vs an empty Worker");
  const startup = await measureStartup(bundleSize.scriptPath, join(tmp, "fifty"), quick ? 3 : 11);
  log("engine alone in Node: runPipeline with an in-memory host, CPU profile");
  const engine = await profileEngine(bundle);

  const all: Results = {
    ...results,
    bundle: bundleSize,
    startup,
    engine,
    machine,
    totalS: (performance.now() - t0) / 1000,
    quick,
  };
  const { table, markdown } = renderResults(all);
  process.stdout.write(`\n${table}\n`);
  writeFileSync(join(ROOT, "bench/results.md"), markdown);
  log(`\nwritten to bench/results.md (${all.totalS.toFixed(0)} s)`);
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
