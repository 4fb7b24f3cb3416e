/**
 * What scores cost (`npm run bench:scores`; docs/file-format.md, "Scores"), on one local workerd
 * (Miniflare) serving bench/entry.ts:
 *
 * - A 10-step transform workflow with two `expr` scorers on its last step against the same
 *   workflow without: p50 of `POST /invoke/{name}` with `Prefer: wait`, interleaved, and the
 *   difference (target ≤ 0.2 ms).
 * - Rows its run's object writes: without scorers, with `expr` scorers (the same), and with a judge
 *   answered by a fake provider on 127.0.0.1 after the answer (one more: the judged scores).
 *
 *   npm run bench:scores               # 200 runs each
 *   npm run bench:scores -- --quick    # 30
 *
 * Writes bench/scores-results.md. Not part of `npm test`. Network: 127.0.0.1 only.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { machineLine, ROOT, resultsPath } from "./dev-server.ts";
import { median } from "./latency.ts";
import { rowsWritten, startOwnWorker } from "./own-bundle.ts";

const quick = process.argv.includes("--quick");
const N = Number(process.env.BENCH_SAMPLES ?? (quick ? 30 : 200));
const WARMUP = 10;
const tmp = join(ROOT, "bench/tmp/scores");
const log = (s: string) => process.stderr.write(`${s}\n`);
const now = () => performance.timeOrigin + performance.now();

const GATEWAY = `env:
  - { name: MODEL_BASE_URL, secret: false }
  - { name: MODEL_API_KEY, secret: true }
providers:
  - name: fake
    type: openai
    config:
      base_url: "{{ env.MODEL_BASE_URL }}"
      api_key: "{{ env.MODEL_API_KEY }}"
model_groups:
  - name: fake
    models: [fake/fake-judge]
    default_max_tokens: 100
    pricing:
      - { model: fake-judge, input_per_million: 1, output_per_million: 2 }
`;

const JUDGE = `name: judge
description: Judges.
model: fake
params: { schema: { type: object, properties: { answer: {} } } }
prompt: { user: "Judge {{ params.answer }}" }
output: { schema: { type: object, required: [score], properties: { score: { type: number }, reason: { type: string } } } }
`;

const steps = (last: string) =>
  `${Array.from({ length: 9 }, (_, i) => `  - { id: s${i + 1}, transform: { ops: [{ map: { expr: "{n: \`${i + 1}\`}" } }] } }`).join("\n")}
  - id: last
    transform:
      inputs: [{ from: "{{ {n: \`10\`, text: 'an answer'} }}" }]
      ops: []
${last}`;

const workflow = (name: string, score: string) => `kind: workflow
name: ${name}
params: { schema: { type: object } }
pipeline:
${steps(score)}`;

const EXPR = `    score:
      - { name: long, expr: "length(output.result.text) > \`3\`" }
      - { name: ten, expr: "output.result.n == \`10\`" }
`;
const JUDGED = `    score:
      - { name: helpful, judge: { agent: ./judge.agent.yaml, params: { answer: "{{ output.result.text }}" } } }
`;

const provider = createServer((req, res) => {
  req.resume();
  req.on("end", () => {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(
      JSON.stringify({
        choices: [{ message: { role: "assistant", content: '{"score": 0.8, "reason": "fine"}' } }],
        usage: { prompt_tokens: 10, completion_tokens: 8, total_tokens: 18 },
      }),
    );
  });
});

async function main(): Promise<void> {
  mkdirSync(tmp, { recursive: true });
  await new Promise<void>((r) => provider.listen(0, "127.0.0.1", r));
  const port = (provider.address() as AddressInfo).port;
  log("compiling the scores bench workflows and bundling bench/entry.ts");
  const mf = await startOwnWorker(
    tmp,
    {
      "gateway.yaml": GATEWAY,
      "judge.agent.yaml": JUDGE,
      "bench-plain.workflow.yaml": workflow("bench-plain", ""),
      "bench-scored.workflow.yaml": workflow("bench-scored", EXPR),
      "bench-judged.workflow.yaml": workflow("bench-judged", JUDGED),
    },
    { MODEL_BASE_URL: `http://127.0.0.1:${port}`, MODEL_API_KEY: "bench-model-key-0001" },
  );
  try {
    const base = (await mf.ready).origin;
    const invoke = async (name: string) => {
      const res = await fetch(`${base}/invoke/${name}`, {
        method: "POST",
        headers: { "content-type": "application/json", prefer: "wait=30" },
        body: "{}",
      });
      return (await res.json()) as { run_id: string; scores: unknown[] };
    };
    const times: Record<string, number[]> = { plain: [], scored: [] };
    let plainRun = "";
    let scoredRun = "";
    log(`${N} runs each, interleaved`);
    for (let i = 0; i < WARMUP + N; i++) {
      for (const [key, name] of [
        ["plain", "bench-plain"],
        ["scored", "bench-scored"],
      ] as const) {
        const t0 = now();
        const e = await invoke(name);
        if (i >= WARMUP) times[key]?.push(now() - t0);
        if (key === "plain") plainRun = e.run_id;
        else scoredRun = e.run_id;
      }
    }
    const judged = await invoke("bench-judged");
    // The judge answers after the run: its scores are written once it has.
    for (let i = 0; i < 200; i++) {
      const e = (await (await fetch(`${base}/runs/${judged.run_id}`)).json()) as { scores: unknown[] };
      if (e.scores.length > 0) break;
      await new Promise((r) => setTimeout(r, 25));
    }
    const rows = {
      plain: await rowsWritten(base, plainRun),
      scored: await rowsWritten(base, scoredRun),
      judged: await rowsWritten(base, judged.run_id),
    };
    const p = (k: string) => median(times[k] ?? []);
    const f = (n: number) => n.toFixed(3);
    const md = `# What scores cost

\`npm run bench:scores\` (bench/scores.ts) on ${new Date().toISOString().slice(0, 10)}${quick ? " (--quick)" : ""}:
one local workerd (Miniflare) serving bench/entry.ts; a 10-step transform workflow, ${N} runs with two
\`expr\` scorers on its last step and ${N} without, interleaved (after ${WARMUP} of each), one at a time.

| | p50 |
|---|---:|
| \`POST /invoke/bench-plain\` with \`Prefer: wait\` | ${f(p("plain"))} ms |
| the same with two \`expr\` scorers | ${f(p("scored"))} ms |
| what the scorers add | ${f(p("scored") - p("plain"))} ms (target ≤ 0.2) |

Rows the run's object writes: without scorers ${rows.plain}, with \`expr\` scorers ${rows.scored} (target: the same),
with a judge answered after the run ${rows.judged} (target: one more, the judged scores).
Machine: ${machineLine()}.
`;
    writeFileSync(resultsPath("scores-results.md"), md);
    process.stdout.write(md);
  } finally {
    await mf.dispose();
    provider.close();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
