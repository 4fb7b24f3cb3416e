/**
 * How fast a queue starts runs (`npm run bench:queues`; docs/triggers.md, "Queues"), on one local
 * workerd (Miniflare) serving bench/entry.ts with miniflare's queue broker: a workflow with
 * `invoke.queue` is fed N messages (sent with `sendBatch`, 100 a call, by a bench route of the same
 * Worker, as a producer Worker would) and consumed in batches of 100; the same N runs are then
 * started by `POST /invoke/{name}`, 100 in flight at a time, as a bursty producer without a queue
 * would.
 *
 * - Messages per second into started runs: N over the time from the first send to the last run's
 *   `created_at`; invokes per second likewise, from the first request.
 * - Rows written per run started each way (target: a queue message costs what an invoke does).
 *
 *   npm run bench:queues               # 1,000 messages and 1,000 invokes
 *   npm run bench:queues -- --quick    # 200 each
 *
 * Writes bench/queues-results.md. Not part of `npm test`. Network: 127.0.0.1 only.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { machineLine, ROOT, resultsPath } from "./dev-server.ts";
import { median } from "./latency.ts";
import { rowsWritten, startOwnWorker } from "./own-bundle.ts";

const quick = process.argv.includes("--quick");
const N = quick ? 200 : 1000;
const tmp = join(ROOT, "bench/tmp/queues");
const log = (s: string) => process.stderr.write(`${s}\n`);

const WORKFLOW = `kind: workflow
name: bench-queue
params:
  schema: { type: object, required: [order], properties: { order: { type: integer }, via: { type: string } } }
invoke:
  queue: bench-queue
pipeline:
  - id: a
    transform: { inputs: [{ from: "{{ params }}" }], ops: [] }
  - id: b
    transform: { inputs: [{ from: "{{ step.a.result }}" }], ops: [] }
  - id: c
    transform: { inputs: [{ from: "{{ step.b.result }}" }], ops: [] }
`;

const WRANGLER = `[[queues.consumers]]
queue = "bench-queue"
max_batch_size = 100
dead_letter_queue = "bench-queue-dead"
`;

interface Listed {
  run_id: string;
  created_at: string;
  status: string;
}

async function main(): Promise<void> {
  mkdirSync(tmp, { recursive: true });
  log("compiling the queue bench workflow and bundling bench/entry.ts");
  const mf = await startOwnWorker(
    tmp,
    { "bench-queue.workflow.yaml": WORKFLOW, "wrangler.toml": WRANGLER },
    // Listing entries soon after each run, so the bench can count the runs it started.
    { LISTING_FLUSH_MS: "100", LISTING_RIDE_MS: "off", AFTER_ANSWER_MS: "0" },
    {
      queueProducers: { BENCH_QUEUE: { queueName: "bench-queue" } },
      queueConsumers: { "bench-queue": { maxBatchSize: 100, maxBatchTimeout: 0.05, maxRetries: 3 } },
    },
  );
  try {
    const base = (await mf.ready).origin;
    /** Every listed run of the workflow, once `n` of those started `via` are listed. */
    const listed = async (via: string, n: number): Promise<Listed[]> => {
      const deadline = Date.now() + 120_000;
      for (;;) {
        const all: Listed[] = [];
        let cursor: string | null = null;
        do {
          const q: string = cursor ? `&cursor=${encodeURIComponent(cursor)}` : "";
          const page = (await (await fetch(`${base}/runs?workflow=bench-queue&limit=100${q}`)).json()) as {
            runs: Listed[];
            next_cursor: string | null;
          };
          all.push(...page.runs);
          cursor = page.next_cursor;
        } while (cursor);
        const mine = all.filter((r) => seen.get(r.run_id) === via || !seen.has(r.run_id));
        for (const r of mine) seen.set(r.run_id, via);
        const count = [...seen.values()].filter((v) => v === via).length;
        if (count >= n) return all.filter((r) => seen.get(r.run_id) === via);
        if (Date.now() > deadline) throw new Error(`only ${count} of ${n} runs via ${via} were listed`);
        await new Promise((r) => setTimeout(r, 200));
      }
    };
    const seen = new Map<string, string>();
    const rows = (runId: string) => rowsWritten(base, runId);

    // Warm-up: one of each, not counted.
    const sent = await fetch(`${base}/bench/queue-send`, {
      method: "POST",
      body: JSON.stringify([{ order: 0, via: "warm" }]),
    });
    if (!sent.ok)
      throw new Error(`the bench could not send to its queue: ${sent.status} ${await sent.text()}`);
    await fetch(`${base}/invoke/bench-queue`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ order: 0, via: "warm" }),
    });
    await listed("warm", 2);

    log(`queue: ${N} messages`);
    const q0 = Date.now();
    const bodies = Array.from({ length: N }, (_, i) => ({ order: i + 1, via: "queue" }));
    await fetch(`${base}/bench/queue-send`, { method: "POST", body: JSON.stringify(bodies) });
    const queueRuns = await listed("queue", N);
    const queueEnd = Math.max(...queueRuns.map((r) => Date.parse(r.created_at)));

    log(`http: ${N} invokes, 100 in flight`);
    const h0 = Date.now();
    for (let i = 0; i < N; i += 100) {
      await Promise.all(
        Array.from({ length: Math.min(100, N - i) }, (_, k) =>
          fetch(`${base}/invoke/bench-queue`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ order: i + k + 1, via: "http" }),
          }).then((r) => r.arrayBuffer()),
        ),
      );
    }
    const httpRuns = await listed("http", N);
    const httpEnd = Math.max(...httpRuns.map((r) => Date.parse(r.created_at)));

    const sample = (runs: Listed[]) => runs.slice(0, 20).map((r) => r.run_id);
    const queueRows = median(await Promise.all(sample(queueRuns).map(rows)));
    const httpRows = median(await Promise.all(sample(httpRuns).map(rows)));
    const queueRate = N / ((queueEnd - q0) / 1000);
    const httpRate = N / ((httpEnd - h0) / 1000);
    const failed = [...queueRuns, ...httpRuns].filter((r) => r.status !== "complete").length;
    const machine = machineLine();
    const verdict = queueRows <= httpRows ? "met" : "NOT met";
    const md = `# What a queue costs

\`npm run bench:queues\` (bench/queues.ts) on ${new Date().toISOString().slice(0, 10)}${quick ? " (--quick)" : ""}:
one local workerd (Miniflare) serving bench/entry.ts, with miniflare's queue broker. A workflow of
three transform steps with \`invoke.queue\`; ${N} messages sent in \`sendBatch\` calls of 100 and
consumed in batches of 100, then ${N} invokes of the same workflow, 100 in flight at a time.

| | queue | HTTP invoke |
|---|---:|---:|
| runs started per second (first send or request to the last run's \`created_at\`) | ${queueRate.toFixed(0)} | ${httpRate.toFixed(0)} |
| rows written per run (median of 20; target: a message costs what an invoke does) | ${queueRows} (${verdict}) | ${httpRows} |
| runs not complete | ${queueRuns.filter((r) => r.status !== "complete").length} | ${httpRuns.filter((r) => r.status !== "complete").length} |

A message is acked once its run's object answered; the run object writes the same rows whichever
trigger created it (the message's id is its idempotency key, as an invoke's \`Idempotency-Key\`
would be, and nothing else is stored). The broker here runs in the same workerd as the Worker,
so the queue's rate is this machine's, not Cloudflare's (a deployed consumer scales out to more
concurrent batches: \`max_concurrency\`). Machine: ${machine}.
`;
    if (failed > 0) log(`warning: ${failed} runs did not complete`);
    writeFileSync(resultsPath("queues-results.md"), md);
    process.stdout.write(md);
  } finally {
    await mf.dispose();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
