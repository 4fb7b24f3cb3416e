/**
 * `npm run bench:ablate`: the ablation table of `npm run bench` alone (bench/ablation.ts), with
 * more samples: what each part of a run costs, found by switching one off at a time, next to the
 * bare Durable Object floor with one part of ours added at a time. About two minutes; prints the
 * table, writes nothing.
 *
 *   STEPS=50 npm run bench:ablate     another pipeline size (1, 10 or 50; default 10)
 *   SAMPLES=200 npm run bench:ablate  latency samples per variant (default 100)
 *   npm run bench:ablate -- --quick   a few runs of each, to check that the command works
 *                                     (npm run bench:check)
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { ablationVariants, renderAblation, runAblation } from "./ablation.ts";
import { AFTER_RUNS_SETTLE_MS } from "./cpu.ts";
import { ROOT, startBenchServer } from "./dev-server.ts";
import { buildBenchBundle } from "./pipelines.ts";

const quick = process.argv.includes("--quick");
const steps = Number(process.env.STEPS ?? 10);
const samples = Number(process.env.SAMPLES ?? (quick ? 10 : 100));
const tmp = join(ROOT, "bench/tmp");
mkdirSync(tmp, { recursive: true });
buildBenchBundle(tmp);
const server = await startBenchServer(tmp);
try {
  const rows = await runAblation(ablationVariants(server.url, steps), server.pid, {
    samples,
    cpuRounds: quick ? 1 : 3,
    cpuBlock: quick ? 5 : 40,
    // What a run leaves behind (its shard's batch, its guard alarm) is counted with it.
    settleMs: quick ? 500 : AFTER_RUNS_SETTLE_MS,
  });
  console.log(`${steps} steps, ${samples} latency samples per variant\n`);
  console.log(renderAblation(rows));
} finally {
  await server.stop();
}
