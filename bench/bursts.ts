/**
 * `npm run bench:bursts`: what shaping bursts costs (docs/triggers.md, "Shaping bursts";
 * docs/operations.md, "What burst shaping costs"), on the bench Worker in local workerd, written to
 * bench/bursts-results.md.
 *
 * 1. Per setting, sequential and interleaved with `/health`: a 10-step run with `Prefer: wait`
 *    plain, with `concurrency` and with `throttle` (limits no run reaches: the difference is the
 *    key's Durable Object on the invoke path), and the `202` answer of an invoke plain, joining a
 *    debounce group and joining a batch; the rows the key object writes per run or per invoke,
 *    and the rows a run's own object writes.
 * 2. A burst: 10,000 invokes of one workflow throttled to 100 starts a second, from 64 clients
 *    at once; every one must be answered 202 and every run must complete with its own params.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { cpus } from "node:os";
import { join } from "node:path";
import { ROOT, resultsPath, startBenchServer } from "./dev-server.ts";
import { interleaved, oursRunner, percentile, type Runner, summarize } from "./latency.ts";
import { BENCH_PARAMS, buildBenchBundle } from "./pipelines.ts";

const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 300);
const WARMUP = 30;
const BURST = Number(process.env.BENCH_BURST ?? 10_000);
const CLIENTS = 64;
const KEY = BENCH_PARAMS.items[0]?.id as string;

const tmp = join(ROOT, "bench/tmp");
mkdirSync(tmp, { recursive: true });
buildBenchBundle(tmp);
const server = await startBenchServer(tmp);
const base = server.url;

interface Writes {
  rows: number;
  byStatement: Record<string, number>;
}
const getJson = async <T>(path: string): Promise<T> => (await (await fetch(`${base}${path}`)).json()) as T;
const flowWrites = (wf: string) =>
  getJson<Writes>(`/bench/flow-writes?name=${encodeURIComponent(`${wf}\n${KEY}`)}`);
const runWrites = (id: string) => getJson<Writes>(`/bench/writes/${id}`);

/** An invoke answered before its run ends (202), the run's id kept. */
function answerRunner(name: string, ids: string[], body = JSON.stringify(BENCH_PARAMS)): Runner {
  return async () => {
    const res = await fetch(`${base}/invoke/${name}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
    });
    const out = (await res.json()) as { run_id?: string; status?: string };
    if (res.status !== 202 || !out.run_id)
      throw new Error(`${name}: HTTP ${res.status} ${JSON.stringify(out)}`);
    ids.push(out.run_id);
  };
}

try {
  const ids: Record<string, string[]> = {
    plain: [],
    concurrency: [],
    throttle: [],
    plain202: [],
    debounce: [],
    batch: [],
  };
  const keep = (k: string) => (id: string) => ids[k]?.push(id);
  const health: Runner = async () => {
    await (await fetch(`${base}/health`)).text();
  };
  const samples = await interleaved(
    [
      ["health", health],
      ["plain", oursRunner(base, 10, keep("plain"))],
      ["concurrency", oursRunner(base, 10, keep("concurrency"), "", "bench-10-concurrency")],
      ["throttle", oursRunner(base, 10, keep("throttle"), "", "bench-10-throttle")],
      ["plain202", answerRunner("bench-10", ids.plain202 as string[])],
      ["debounce", answerRunner("bench-10-debounce", ids.debounce as string[])],
      ["batch", answerRunner("bench-10-batch", ids.batch as string[])],
    ],
    WARMUP,
    SAMPLES,
  );
  const p = (k: string) => samples.get(k) as { p50: number; p99: number };
  const h = p("health").p50;
  const net = (k: string) => p(k).p50 - h;
  const invokes = (k: string) => (ids[k] as string[]).length;
  const perInvoke = async (wf: string, k: string) => (await flowWrites(wf)).rows / invokes(k);
  const keyRows = {
    concurrency: await perInvoke("bench-10-concurrency", "concurrency"),
    throttle: await perInvoke("bench-10-throttle", "throttle"),
    debounce: await perInvoke("bench-10-debounce", "debounce"),
    batch: await perInvoke("bench-10-batch", "batch"),
  };
  const meanRunRows = async (k: string) => {
    const some = (ids[k] as string[]).slice(-20);
    const rows = await Promise.all(some.map(async (id) => (await runWrites(id)).rows));
    return rows.reduce((a, b) => a + b, 0) / rows.length;
  };
  const runRows = {
    plain: await meanRunRows("plain"),
    concurrency: await meanRunRows("concurrency"),
    throttle: await meanRunRows("throttle"),
  };
  const debounceRuns = new Set(ids.debounce).size;
  const batchRuns = new Set(ids.batch).size;

  // ---- the burst ----
  const answers: Array<{ id: string; status: string; ms: number; http: number }> = [];
  let next = 0;
  const t0 = performance.now();
  const tStart = Date.now();
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      while (next < BURST) {
        const n = next++;
        const s = performance.now();
        const res = await fetch(`${base}/invoke/bench-1-burst`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ items: [{ id: `e-${n}`, n: 0 }] }),
        });
        const out = (await res.json()) as { run_id?: string; status?: string };
        answers.push({
          id: out.run_id ?? "",
          status: out.status ?? "",
          ms: performance.now() - s,
          http: res.status,
        });
      }
    }),
  );
  const answeredS = (performance.now() - t0) / 1000;
  const byHttp = new Map<number, number>();
  for (const a of answers) byHttp.set(a.http, (byHttp.get(a.http) ?? 0) + 1);
  const queuedAtAnswer = answers.filter((a) => a.status === "queued").length;
  const answerLatency = summarize(answers.map((a) => a.ms));
  // Drain: every run must complete, with its own event.
  let pending = answers.filter((a) => a.http === 202).map((a) => a.id);
  const finished: Array<{ status: string; finished: number }> = [];
  let wrong = 0;
  while (pending.length > 0) {
    const still: string[] = [];
    let i = 0;
    await Promise.all(
      Array.from({ length: CLIENTS }, async () => {
        while (i < pending.length) {
          const id = pending[i++] as string;
          const e = (await getJson<{ status: string; finished_at: string | null; output: unknown }>(
            `/runs/${id}`,
          )) as {
            status: string;
            finished_at: string | null;
            output: { result?: Array<{ n: number }> } | null;
          };
          if (["queued", "pending", "running"].includes(e.status)) still.push(id);
          else {
            finished.push({ status: e.status, finished: Date.parse(e.finished_at ?? "") });
            if (e.output?.result?.[0]?.n !== 1) wrong++;
          }
        }
      }),
    );
    pending = still;
    if (pending.length > 0) await new Promise((r) => setTimeout(r, 1000));
  }
  const complete = finished.filter((f) => f.status === "complete").length;
  const drainedS = (Math.max(...finished.map((f) => f.finished)) - tStart) / 1000;
  const burstKeyRows = (
    await getJson<Writes>(`/bench/flow-writes?name=${encodeURIComponent("bench-1-burst\n")}`)
  ).rows;

  const ms = (x: number) => `${x.toFixed(2)} ms`;
  const row = (label: string, k: string, rows: string) =>
    `| ${label} | ${ms(p(k).p50)} | ${ms(p(k).p99)} | ${ms(net(k))} | ${rows} |`;
  const text = `# What shaping bursts costs

\`npm run bench:bursts\` on ${cpus().length} cores, ${new Date().toISOString().slice(0, 10)}, on the bench Worker in
local workerd (bench/bursts.ts). Each series ${SAMPLES} sequential invokes, interleaved after ${WARMUP} warm-up
rounds; p50 net subtracts the p50 of \`GET /health\` (the fixed HTTP cost). Every setting keys on
the same value, so all invokes of a series meet in one key object.

## Per setting

| series | p50 | p99 | p50 net of /health | rows written |
|---|---|---|---|---|
| \`GET /health\` | ${ms(h)} | ${ms(p("health").p99)} | | |
| 10 steps, \`Prefer: wait\`, plain | ${ms(p("plain").p50)} | ${ms(p("plain").p99)} | ${ms(net("plain"))} | ${runRows.plain.toFixed(2)} per run (its own object) |
| … with \`concurrency\` (limit 100) | ${ms(p("concurrency").p50)} | ${ms(p("concurrency").p99)} | ${ms(net("concurrency"))} | ${runRows.concurrency.toFixed(2)} per run + ${keyRows.concurrency.toFixed(2)} in the key object |
| … with \`throttle\` (10,000 per 60 s) | ${ms(p("throttle").p50)} | ${ms(p("throttle").p99)} | ${ms(net("throttle"))} | ${runRows.throttle.toFixed(2)} per run + ${keyRows.throttle.toFixed(2)} in the key object |
${row("10 steps, answered 202, plain", "plain202", "")}
${row("… joining a debounce group", "debounce", `${keyRows.debounce.toFixed(2)} per invoke in the key object (${debounceRuns} run${debounceRuns === 1 ? "" : "s"} for ${invokes("debounce")} invokes)`)}
${row("… joining a batch", "batch", `${keyRows.batch.toFixed(2)} per invoke in the key object (${batchRuns} run${batchRuns === 1 ? "" : "s"} for ${invokes("batch")} invokes)`)}

Added per invoke, p50 net: concurrency **${ms(net("concurrency") - net("plain"))}**, throttle
**${ms(net("throttle") - net("plain"))}** (the key object's round trip on the invoke path and its
slot given back at the run's end); an invoke that joins a debounce group or a batch is answered in
${ms(net("debounce"))} / ${ms(net("batch"))} net against ${ms(net("plain202"))} for a plain \`202\` (it makes
no run: one row in the key object). Workflows that declare none of it never contact a key object
(test/run/start/start-run.workerd.test.ts).

## A burst of ${BURST.toLocaleString("en")} invokes to one throttled key

\`bench-1-burst\` (1 step, \`throttle: {limit: 100, period_s: 1}\`, no key) invoked ${BURST.toLocaleString("en")} times by
${CLIENTS} clients at once:

- answered: ${[...byHttp].map(([s, n]) => `${n.toLocaleString("en")} × ${s}`).join(", ")} in ${answeredS.toFixed(1)} s (${(answers.length / answeredS).toFixed(0)} invokes/s), ${queuedAtAnswer.toLocaleString("en")} of them \`queued\`; answer p50 ${ms(answerLatency.p50)}, p99 ${ms(answerLatency.p99)}, max ${ms(percentile(answerLatency.ms, 100))}
- runs: ${complete.toLocaleString("en")} complete of ${BURST.toLocaleString("en")}, ${wrong} with a wrong output, ${(BURST - finished.length).toLocaleString("en")} lost; the last finished ${drainedS.toFixed(1)} s after the first invoke (at most 100 starts a second: at least ${(BURST / 100 - 1).toFixed(0)} s)
- the key object wrote ${burstKeyRows.toLocaleString("en")} rows (${(burstKeyRows / BURST).toFixed(2)} per invoke)
`;
  writeFileSync(resultsPath("bursts-results.md"), text);
  process.stdout.write(text);
  if (complete !== BURST || wrong > 0) process.exitCode = 1;
} finally {
  await server.stop();
}
