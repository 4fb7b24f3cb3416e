/**
 * What compensation costs (`npm run bench:compensation`; docs/file-format.md, "Compensation"), on
 * one local workerd (Miniflare) serving bench/entry.ts (our app with a RunObject that counts the
 * rows it writes), webhooks to a local receiver on 127.0.0.1:
 *
 * 1. A run without `compensate` (the 10-step bench pipeline): rows written per run and p50 net of
 *    a `/health` round trip, interleaved, as `npm run bench` measures them (the phase exists only
 *    for runs that end failed or canceled, so these are today's figures).
 * 2. A compensated run: ten webhook steps that each declare `compensate`, then an eleventh that
 *    fails. Rows written per run once its ten compensations are done, against the same run
 *    without `compensate` (target: at most one row per compensation attempt plus one), and the
 *    time from the run's end (`finished_at`) to the last undo call's arrival at the receiver.
 *
 *   npm run bench:compensation               # 100 latency samples, 10 compensated runs
 *   npm run bench:compensation -- --quick    # 20 and 3
 *
 * Writes bench/compensation-results.md. Not part of `npm test`. Network: 127.0.0.1 only.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { startWebhookTarget } from "../test/servers/webhook-target.ts";
import { machineLine, ROOT, resultsPath } from "./dev-server.ts";
import { interleaved, median, oursRunner, type Runner } from "./latency.ts";
import { rowsWritten, startOwnWorker } from "./own-bundle.ts";
import { pipelineName, pipelineYaml } from "./pipelines.ts";

const quick = process.argv.includes("--quick");
const SAMPLES = quick ? 20 : 100;
const SAGAS = quick ? 3 : 10;
const STEPS = 10;
const tmp = join(ROOT, "bench/tmp/compensation");
const log = (s: string) => process.stderr.write(`${s}\n`);

/** Ten webhook steps (each undone when `undo` is set) and an eleventh that fails. */
function sagaYaml(name: string, undo: boolean): string {
  const lines = [
    "kind: workflow",
    `name: ${name}`,
    "version: 1.0.0",
    `description: ${STEPS} webhook steps, then one that fails (npm run bench:compensation).`,
    "params:",
    "  schema:",
    "    type: object",
    "    required: [key]",
    "    properties: { key: { type: string } }",
    "env:",
    "  - { name: TARGET_URL, secret: false }",
    "pipeline:",
  ];
  for (let i = 1; i <= STEPS; i++) {
    lines.push(
      `  - id: s${i}`,
      ...(i > 1 ? [`    depends_on: [s${i - 1}]`] : []),
      "    webhook:",
      '      url: "{{ env.TARGET_URL }}/echo?key={{ params.key }}-do"',
      ...(undo
        ? [
            "    compensate:",
            "      webhook:",
            '        url: "{{ env.TARGET_URL }}/echo?key={{ params.key }}-undo"',
            "        method: DELETE",
          ]
        : []),
    );
  }
  lines.push(
    "  - id: fail",
    `    depends_on: [s${STEPS}]`,
    "    webhook:",
    '      url: "{{ env.TARGET_URL }}/status/400?key={{ params.key }}-do"',
  );
  return `${lines.join("\n")}\n`;
}

async function main(): Promise<void> {
  mkdirSync(tmp, { recursive: true });
  log("compiling the compensation bench workflows and bundling bench/entry.ts");
  const target = await startWebhookTarget();
  const targetUrl = `http://127.0.0.1:${target.port}`;
  const mf = await startOwnWorker(
    tmp,
    {
      [`${pipelineName(STEPS)}.workflow.yaml`]: pipelineYaml(STEPS),
      "bench-saga.workflow.yaml": sagaYaml("bench-saga", true),
      "bench-saga-plain.workflow.yaml": sagaYaml("bench-saga-plain", false),
    },
    { TARGET_URL: targetUrl },
  );
  try {
    const base = (await mf.ready).origin;
    const rows = (runId: string) => rowsWritten(base, runId);

    // 1. A run without compensate.
    const plainIds: string[] = [];
    const health: Runner = async () => {
      await (await fetch(`${base}/health`)).text();
    };
    const samples = await interleaved(
      [
        ["health", health],
        ["run", oursRunner(base, STEPS, (id) => plainIds.push(id))],
      ],
      5,
      SAMPLES,
    );
    const p50 = (k: string) => (samples.get(k) as { p50: number }).p50;
    const plainRows = median(await Promise.all(plainIds.slice(-10).map(rows)));

    // 2. The same failing run with and without compensate.
    const saga = async (name: string) => {
      const key = `${name}-${crypto.randomUUID()}`;
      const res = await fetch(`${base}/invoke/${name}`, {
        method: "POST",
        headers: { "content-type": "application/json", prefer: "wait=30" },
        body: JSON.stringify({ key }),
      });
      const e = (await res.json()) as { run_id: string; status: string; finished_at: string };
      if (e.status !== "failed") throw new Error(`${name}: ${res.status} ${JSON.stringify(e).slice(0, 300)}`);
      type Phase = { status: string; steps: Array<{ attempts: number }> } | null;
      let compensation: Phase = null;
      for (let i = 0; i < 600; i++) {
        const env = (await (await fetch(`${base}/runs/${e.run_id}`)).json()) as { compensation: Phase };
        compensation = env.compensation;
        if (compensation?.status !== "running") break;
        await new Promise((r) => setTimeout(r, 20));
      }
      const undos = (await (await fetch(`${targetUrl}/log?key=${key}-undo`)).json()) as Array<{
        time: number;
      }>;
      const last = undos.reduce((t, u) => Math.max(t, u.time), 0);
      return {
        rows: await rows(e.run_id),
        attempts: (compensation?.steps ?? []).reduce((n, s) => n + s.attempts, 0),
        status: compensation?.status ?? null,
        undos: undos.length,
        lastUndoMs: last === 0 ? null : last - Date.parse(e.finished_at),
      };
    };
    await saga("bench-saga");
    const compensated = [];
    const plain = [];
    for (let i = 0; i < SAGAS; i++) {
      compensated.push(await saga("bench-saga"));
      plain.push(await saga("bench-saga-plain"));
    }
    if (compensated.some((c) => c.status !== "complete" || c.undos !== STEPS))
      throw new Error(`a compensation did not complete: ${JSON.stringify(compensated)}`);
    const sagaRows = median(compensated.map((c) => c.rows));
    const plainSagaRows = median(plain.map((c) => c.rows));
    const attempts = median(compensated.map((c) => c.attempts));
    const added = sagaRows - plainSagaRows;
    const lastUndo = median(compensated.map((c) => c.lastUndoMs ?? Number.NaN));
    const verdict = added <= attempts + 1 ? "met" : "NOT met";
    const f = (n: number) => n.toFixed(2);
    const machine = machineLine();
    const md = `# What compensation costs

\`npm run bench:compensation\` (bench/compensation.ts) on ${new Date().toISOString().slice(0, 10)}${quick ? " (--quick)" : ""}:
one local workerd (Miniflare) serving bench/entry.ts, webhooks to a local receiver on 127.0.0.1.

| | measured |
|---|---:|
| a run without \`compensate\` (10 transform steps): rows written per run | ${plainRows} |
| the same: p50 latency net of \`/health\` (${SAMPLES} runs, interleaved) | ${f(p50("run") - p50("health"))} ms |
| a run of 10 webhook steps and a failing 11th: rows written, without \`compensate\` | ${plainSagaRows} |
| the same with \`compensate\` on the 10 steps, once its 10 compensations are done | ${sagaRows} |
| rows the compensation phase added (target: at most its ${attempts} attempts + 1) | ${added} (${verdict}) |
| time from the run's end to the last undo call's arrival (median of ${SAGAS}) | ${f(lastUndo)} ms |

The phase writes the run document once per compensation, when it ends (the last one carries the
phase's status); nothing for a run that completes, so the first two rows are what \`npm run
bench\` measures for the same pipeline. Machine: ${machine}.
`;
    writeFileSync(resultsPath("compensation-results.md"), md);
    process.stdout.write(md);
  } finally {
    await mf.dispose();
    await target.close();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
