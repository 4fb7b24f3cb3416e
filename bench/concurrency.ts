/**
 * `npm run bench:concurrency`: what `invoke.concurrency` adds to an invoke (docs/triggers.md). The same
 * 10-step pipeline with and without `invoke.concurrency` (a limit of 100 that no run here
 * reaches, so nothing queues: the difference is the key's Durable Object asked for a slot on the
 * invoke path and told when the run ends), interleaved with `/health`, sequential, on the bench
 * Worker in local workerd. Writes bench/concurrency-results.md.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { cpus } from "node:os";
import { join } from "node:path";
import { ROOT, startBenchServer } from "./dev-server.ts";
import { interleaved, oursRunner, type Runner } from "./latency.ts";
import { buildBenchBundle, KEYED_PIPELINE } from "./pipelines.ts";

const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 300);
const WARMUP = 30;
const tmp = join(ROOT, "bench/tmp");
mkdirSync(tmp, { recursive: true });
buildBenchBundle(tmp);
const server = await startBenchServer(tmp);
try {
  const base = server.url;
  const health: Runner = async () => {
    await (await fetch(`${base}/health`)).text();
  };
  const samples = await interleaved(
    [
      ["plain", oursRunner(base, 10)],
      ["keyed", oursRunner(base, 10, undefined, "", KEYED_PIPELINE)],
      ["health", health],
    ],
    WARMUP,
    SAMPLES,
  );
  const p = (k: string) => samples.get(k) as { p50: number; p99: number };
  const h = p("health").p50;
  const plain = p("plain").p50 - h;
  const keyed = p("keyed").p50 - h;
  const ms = (x: number) => `${x.toFixed(2)} ms`;
  const text = `# What per-key concurrency adds to an invoke

\`npm run bench:concurrency\` on ${cpus().length} cores, ${new Date().toISOString().slice(0, 10)}: the
10-step transform pipeline invoked with \`Prefer: wait\`, ${SAMPLES} sequential runs of each series
interleaved after ${WARMUP} warm-up, on the bench Worker in local workerd. \`keyed\` declares
\`invoke.concurrency: {limit: 100, key: "{{ params.items[0].id }}"}\`: every invoke asks the key's
object for a slot and every run gives it back when it ends; with 100 slots nothing queues.

| series | p50 | p99 | p50 net of /health |
|---|---|---|---|
| /health | ${ms(h)} | ${ms(p("health").p99)} | |
| plain (no concurrency) | ${ms(p("plain").p50)} | ${ms(p("plain").p99)} | ${ms(plain)} |
| keyed (invoke.concurrency) | ${ms(p("keyed").p50)} | ${ms(p("keyed").p99)} | ${ms(keyed)} |

Added per invoke, p50 net: **${ms(keyed - plain)}** (${(keyed / plain).toFixed(2)}x the plain run).
Storage: the key's object writes 2 rows per run (its slot taken and given back) and the run's
own document carries the key (no extra row in the run's object). Workflows without
\`invoke.concurrency\` never contact the key's object.
`;
  writeFileSync(join(ROOT, "bench/concurrency-results.md"), text);
  process.stdout.write(text);
} finally {
  await server.stop();
}
