/**
 * `npm run bench:paths`: the same runs through both ways the Worker is served here — Miniflare
 * driven directly (what `npm run bench` uses) and `wrangler dev` (what `npm start` is) — with the
 * fixed cost of a request (`GET /health`) taken out, ours against the bare Durable Object, and the
 * parts of ours that could cost more under `wrangler dev` switched off one at a time (the listing
 * write, the `run.finished` log line). Writes bench/paths-results.md.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { cpus } from "node:os";
import { join } from "node:path";
import { writeGeneratedSources } from "../scripts/generated-sources.ts";
import { ROOT, resultsPath, startBenchServer } from "./dev-server.ts";
import { baselineRunner, interleaved, oursRunner, type Runner } from "./latency.ts";
import { buildBenchBundle, EXPRESS_PIPELINE } from "./pipelines.ts";
import { healthRunner, startWranglerDev } from "./wrangler-dev.ts";

const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 200);
const WARMUP = 30;
const tmp = join(ROOT, "bench/tmp");
mkdirSync(tmp, { recursive: true });
buildBenchBundle(tmp);
await writeGeneratedSources(join(ROOT, "src/generated"));

function series(base: string): Array<readonly [string, Runner]> {
  return [
    ["health", healthRunner(base)],
    ["ours", oursRunner(base, 10)],
    ["express", oursRunner(base, 10, undefined, "", EXPRESS_PIPELINE)],
    ["listing off", oursRunner(base, 10, undefined, "/bench/unlisted")],
    ["listing and log line off", oursRunner(base, 10, undefined, "/bench/v/NOLOG")],
    ["bare", baselineRunner(base, "bare", 10)],
  ];
}

const miniflare = await startBenchServer(tmp);
const wrangler = await startWranglerDev(tmp);
try {
  const results: Array<[string, Map<string, { p50: number; p99: number }>]> = [];
  for (const [path, base] of [
    ["Miniflare (npm run bench)", miniflare.url],
    ["wrangler dev (npm start)", wrangler.url],
  ] as const) {
    process.stderr.write(`${path}: ${SAMPLES} samples per series\n`);
    results.push([path, await interleaved(series(base), WARMUP, SAMPLES)]);
  }
  const ms = (v: number) => `${v.toFixed(2)} ms`;
  const rows: string[] = [];
  for (const [path, s] of results) {
    const p = (k: string) => s.get(k)?.p50 ?? Number.NaN;
    const h = p("health");
    const bare = p("bare") - h;
    for (const k of ["ours", "express", "listing off", "listing and log line off", "bare"])
      rows.push(`| ${path} | ${k} | ${ms(p(k))} | ${ms(p(k) - h)} | ${((p(k) - h) / bare).toFixed(2)}x |`);
    rows.push(`| ${path} | GET /health | ${ms(h)} | | |`);
  }
  const text = `# The two paths: Miniflare and wrangler dev

\`npm run bench:paths\` (bench/paths.ts) on ${cpus().length} cores, ${new Date().toISOString().slice(0, 10)}: the 10-step
transform run, ${SAMPLES} sequential invokes per series after ${WARMUP} warm-up, interleaved, on the bench Worker
served by Miniflare directly and by \`wrangler dev\` (its output read and dropped, as a terminal shows
it). Net: the p50 less the p50 of \`GET /health\` on the same server.

| served by | series | p50 | p50 net of /health | net / bare DO net |
|---|---|---|---|---|
${rows.join("\n")}
`;
  writeFileSync(resultsPath("paths-results.md"), text);
  process.stdout.write(text);
} finally {
  await wrangler.stop();
  await miniflare.stop();
}
