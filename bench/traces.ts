/**
 * What a run's trace costs (`npm run bench:traces`; docs/operations.md, "Traces"): two bench
 * Workers side by side, one without an OTLP endpoint and one exporting to a local collector on
 * 127.0.0.1, the 10-step pipeline on each.
 *
 * 1. Latency, interleaved: a run with `Prefer: wait` on each, each beside a `/health` round trip
 *    to the same Worker, so the p50s are net of fixed HTTP cost.
 * 2. CPU per run of each workerd (user + system from /proc), in alternating blocks.
 * 3. What the collector received: requests and spans per run.
 *
 * Writes bench/traces-results.md. Targets: export off is today's figure within noise; on adds at
 * most 10 % CPU per run and nothing to p50 (the export leaves after the answer).
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { cpus } from "node:os";
import { join } from "node:path";
import { cpuPerRun } from "./cpu.ts";
import { ROOT, resultsPath, startBenchServer } from "./dev-server.ts";
import { interleaved, oursRunner, type Runner } from "./latency.ts";
import { buildBenchBundle } from "./pipelines.ts";

const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 300);
const WARMUP = 30;
const CPU_ROUNDS = Number(process.env.BENCH_CPU_ROUNDS ?? 3);
const CPU_BLOCK = 40;
const SETTLE_MS = 400;

// The collector: takes every POST, counts requests and spans.
let requests = 0;
let spans = 0;
const collector = createServer((req, res) => {
  let body = "";
  req.on("data", (c) => {
    body += c;
  });
  req.on("end", () => {
    requests += 1;
    spans += (body.match(/"spanId"/g) ?? []).length;
    res.writeHead(200, { "content-type": "application/json" }).end("{}");
  });
});
await new Promise<void>((r) => collector.listen(0, "127.0.0.1", r));
const endpoint = `http://127.0.0.1:${(collector.address() as AddressInfo).port}`;

const tmp = join(ROOT, "bench/tmp");
mkdirSync(tmp, { recursive: true });
buildBenchBundle(tmp);
const off = await startBenchServer(join(tmp, "traces-off"));
const on = await startBenchServer(join(tmp, "traces-on"), { OTEL_EXPORTER_OTLP_ENDPOINT: endpoint });

const health =
  (base: string): Runner =>
  async () => {
    await (await fetch(`${base}/health`)).text();
  };
let onRuns = 0;

try {
  if (off.pid === null || on.pid === null || off.pid === on.pid)
    throw new Error("cannot tell the two workerd apart");
  const samples = await interleaved(
    [
      ["health-off", health(off.url)],
      ["off", oursRunner(off.url, 10)],
      ["health-on", health(on.url)],
      [
        "on",
        oursRunner(on.url, 10, () => {
          onRuns += 1;
        }),
      ],
    ],
    WARMUP,
    SAMPLES,
  );
  const p50 = (k: string) => (samples.get(k) as { p50: number }).p50;
  const netOff = p50("off") - p50("health-off");
  const netOn = p50("on") - p50("health-on");
  // Every span of the latency phase has arrived once the last runs' exports are in.
  await new Promise((r) => setTimeout(r, 1_000));
  const spansPerRun = spans / onRuns;
  const requestsPerRun = requests / onRuns;

  const cpu = { off: 0, on: 0 };
  for (let r = 0; r < CPU_ROUNDS; r++) {
    for (const [k, server] of [
      ["off", off],
      ["on", on],
    ] as const) {
      const m = await cpuPerRun(
        server.pid as number,
        [[k, oursRunner(server.url, 10)]],
        1,
        CPU_BLOCK,
        SETTLE_MS,
      );
      cpu[k] += (m.get(k)?.total ?? 0) / CPU_ROUNDS;
    }
  }
  const f = (n: number) => n.toFixed(2);
  const pct = (a: number, b: number) => `${a >= b ? "+" : ""}${(((a - b) / b) * 100).toFixed(1)} %`;
  const md = `# What a run's trace costs

\`npm run bench:traces\` (bench/traces.ts) on ${new Date().toISOString().slice(0, 10)}, ${cpus().length} CPU(s): the
10-step bench pipeline on two bench Workers side by side (Miniflare, one workerd each), one
without \`OTEL_EXPORTER_OTLP_ENDPOINT\` and one exporting to a local collector on 127.0.0.1.
Latency: ${SAMPLES} runs each with \`Prefer: wait\`, interleaved, each beside a \`/health\` round trip
to the same Worker. CPU: workerd user + system time per run, ${CPU_ROUNDS} alternating blocks of
${CPU_BLOCK} runs, idle time subtracted.

| | export off | export on | difference |
|---|---:|---:|---:|
| p50 latency net of \`/health\` (ms) | ${f(netOff)} | ${f(netOn)} | ${f(netOn - netOff)} ms |
| CPU per run (ms) | ${f(cpu.off)} | ${f(cpu.on)} | ${pct(cpu.on, cpu.off)} |
| export requests per run | 0 | ${f(requestsPerRun)} | |
| spans per run | 0 | ${f(spansPerRun)} | |

Targets: on adds at most 10 % CPU per run and nothing to p50 (the spans leave after the answer).
`;
  writeFileSync(resultsPath("traces-results.md"), md);
  process.stdout.write(md);
} finally {
  await off.stop();
  await on.stop();
  collector.close();
}
