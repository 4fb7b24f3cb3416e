/**
 * `npm run bench:fanout`: a 100-item webhook fan-out against a local receiver, on one local
 * workerd: wall time of the run (invoke to finished envelope) and the storage writes of its run
 * object, which must stay at most steps + items + 2 (docs/file-format.md, docs/errors-and-limits.md). Two
 * receivers: `/echo` (answers at once: what the engine costs per item) and `/hold/50` (50 ms per
 * request: the run's 6 outbound connections are the limit). Prints a table and writes it to
 * bench/fanout-results.md.
 *
 *   npm run bench:fanout               # 10 runs per receiver after 2 warm-up runs
 *   npm run bench:fanout -- --quick    # 3 runs each
 *
 * The bench Worker is bench/entry.ts (our app with a RunObject that counts what it writes),
 * served by Miniflare as in `npm run bench`, but with its own bundle and webhooks to 127.0.0.1
 * allowed. Not part of `npm test`. Network: 127.0.0.1 only.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { startWebhookTarget } from "../test/servers/webhook-target.ts";
import { machineLine, ROOT, resultsPath } from "./dev-server.ts";
import { rowsWritten, startOwnWorker } from "./own-bundle.ts";

const quick = process.argv.includes("--quick");
const RUNS = quick ? 3 : 10;
const WARMUP = 2;
const ITEMS = 100;
/** The bench workflow: one fan-out step and one step after it. */
const STEPS = 2;
const tmp = join(ROOT, "bench/tmp/fanout");
const log = (s: string) => process.stderr.write(`${s}\n`);

const WORKFLOW = `kind: workflow
name: bench-fanout
version: 1.0.0
description: A ${ITEMS}-item webhook fan-out (npm run bench:fanout).
params:
  schema:
    type: object
    required: [route, items]
    properties:
      route: { type: string }
      items: { type: array }
env:
  - { name: TARGET_URL, secret: false }
pipeline:
  - id: post
    webhook:
      url: "{{ env.TARGET_URL }}/{{ params.route }}"
      body: { item: "{{ item }}", index: "{{ item_index }}" }
    for_each:
      from: params.items
  - id: count
    transform:
      inputs:
        - from: "{{ length(step.post.results) }}"
`;

interface Sample {
  ms: number;
  writes: number;
}

function quantile(sorted: number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.round(q * (sorted.length - 1))));
  return sorted[i] as number;
}

async function main(): Promise<void> {
  mkdirSync(tmp, { recursive: true });
  log(`compiling a ${ITEMS}-item webhook fan-out and bundling bench/entry.ts`);
  const target = await startWebhookTarget();
  const mf = await startOwnWorker(
    tmp,
    { "bench-fanout.workflow.yaml": WORKFLOW },
    { TARGET_URL: `http://127.0.0.1:${target.port}` },
  );
  const stop = async () => {
    await mf.dispose();
    await target.close();
  };
  try {
    const base = (await mf.ready).origin;
    const items = Array.from({ length: ITEMS }, (_, i) => ({ n: i, name: `item-${i}` }));
    const oneRun = async (route: string): Promise<Sample> => {
      const t0 = performance.now();
      const res = await fetch(`${base}/invoke/bench-fanout`, {
        method: "POST",
        headers: { "content-type": "application/json", prefer: "wait=60" },
        body: JSON.stringify({ route, items }),
      });
      const ms = performance.now() - t0;
      const e = (await res.json()) as { run_id: string; status: string; steps: Array<{ steps: unknown[] }> };
      if (res.status !== 200 || e.status !== "complete" || e.steps[0]?.steps.length !== ITEMS) {
        throw new Error(
          `run did not complete with ${ITEMS} items: ${res.status} ${JSON.stringify(e).slice(0, 300)}`,
        );
      }
      return { ms, writes: await rowsWritten(base, e.run_id) };
    };

    const rows: string[] = [];
    for (const route of ["echo", "hold/50"]) {
      for (let i = 0; i < WARMUP; i++) await oneRun(route);
      const samples: Sample[] = [];
      for (let i = 0; i < RUNS; i++) samples.push(await oneRun(route));
      const ms = samples.map((s) => s.ms).sort((a, b) => a - b);
      const writes = [...new Set(samples.map((s) => s.writes))].sort((a, b) => a - b);
      const limit = STEPS + ITEMS + 2;
      if (writes.some((w) => w > limit)) throw new Error(`writes per run ${writes.join(", ")} over ${limit}`);
      rows.push(
        `| \`/${route}\` | ${RUNS} | ${quantile(ms, 0.5).toFixed(0)} ms | ${quantile(ms, 0.9).toFixed(0)} ms | ${(quantile(ms, 0.5) / ITEMS).toFixed(2)} ms | ${writes.join(", ")} (limit ${limit}) |`,
      );
      log(rows[rows.length - 1] as string);
    }
    const table = [
      `| receiver | runs | wall time p50 | p90 | per item (p50) | storage writes per run |`,
      "|---|---|---|---|---|---|",
      ...rows,
    ].join("\n");
    const machine = machineLine();
    const doc = `# Fan-out bench (\`npm run bench:fanout\`)

A ${ITEMS}-item webhook fan-out (\`for_each\` with the default concurrency: ${ITEMS} items, at most
6 in flight, the run's outbound limit) plus one transform step, invoked with \`Prefer: wait=60\`
on one local workerd (Miniflare); wall time is invoke to finished envelope. Writes are the run
object's storage writes (one \`run\` document at start and end, one row per finished step and per
item), read from bench/entry.ts's counting RunObject.

${table}

Machine: ${machine}. ${quick ? "Quick run (--quick). " : ""}Timings move by 20-30% between runs on a busy machine.
`;
    writeFileSync(resultsPath("fanout-results.md"), doc);
    process.stdout.write(`${table}\n`);
  } finally {
    await stop();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
