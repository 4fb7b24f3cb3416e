/**
 * What streaming costs (`npm run bench:streaming`; docs/http-api.md, "Streaming"), on one local
 * workerd (Miniflare) serving bench/entry.ts, against a fake OpenAI-compatible provider on
 * 127.0.0.1 that streams 50 chunks 20 ms apart after a 300 ms first chunk, and notes when it sent
 * each. Every run is an invoke with `Accept: text/event-stream` of a one-step workflow whose agent
 * step has `stream: true`.
 *
 * - Time to the first `output.delta` at the caller, minus the time at which the provider sent its
 *   first chunk (both read on this machine's clock): what the run adds, p50, and net of a
 *   `/health` round trip (target: at most 5 ms).
 * - The stream's last delta at the caller, minus the provider's last chunk (target: within 5 ms).
 * - Rows written per run, streaming and not (target: the same).
 *
 *   npm run bench:streaming               # 30 runs
 *   npm run bench:streaming -- --quick    # 5
 *
 * Writes bench/streaming-results.md. Not part of `npm test`. Network: 127.0.0.1 only.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { machineLine, ROOT, resultsPath } from "./dev-server.ts";
import { median } from "./latency.ts";
import { rowsWritten, startOwnWorker } from "./own-bundle.ts";

const quick = process.argv.includes("--quick");
const RUNS = quick ? 5 : 30;
const CHUNKS = 50;
const FIRST_MS = 300;
const GAP_MS = 20;
const tmp = join(ROOT, "bench/tmp/streaming");
const log = (s: string) => process.stderr.write(`${s}\n`);

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
    models: [fake/fake-stream]
    default_max_tokens: 500
    pricing:
      - { model: fake-stream, input_per_million: 1, output_per_million: 2 }
`;

const workflow = (name: string, stream: boolean) => `kind: workflow
name: ${name}
params:
  schema: { type: object, properties: { key: { type: string } } }
pipeline:
  - id: answer
    agent: core/chat@1
${stream ? "    stream: true\n" : ""}    model: { group: fake }
    params: { prompt: "{{ params.key }}" }
`;

/** When the provider sent the first and the last chunk of each reply, by the prompt (the run's key). */
const sent = new Map<string, { first: number; last: number }>();

/** The fake provider: streams when asked, answers whole when not (the same text). */
const provider = createServer((req, res) => {
  let body = "";
  req.on("data", (c) => {
    body += c;
  });
  req.on("end", async () => {
    const request = JSON.parse(body) as { stream?: boolean; messages: Array<{ content: string }> };
    const key = String(request.messages[request.messages.length - 1]?.content ?? "");
    const chunks = Array.from({ length: CHUNKS }, (_, i) => `word${i} `);
    const usage = { prompt_tokens: 10, completion_tokens: CHUNKS, total_tokens: 10 + CHUNKS };
    if (!request.stream) {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(
        JSON.stringify({ choices: [{ message: { role: "assistant", content: chunks.join("") } }], usage }),
      );
      return;
    }
    res.writeHead(200, { "content-type": "text/event-stream" });
    const t: { first: number; last: number } = { first: 0, last: 0 };
    await new Promise((r) => setTimeout(r, FIRST_MS));
    for (const [i, chunk] of chunks.entries()) {
      if (i > 0) await new Promise((r) => setTimeout(r, GAP_MS));
      res.write(`data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: chunk } }] })}\n\n`);
      const now = performance.timeOrigin + performance.now();
      if (i === 0) t.first = now;
      t.last = now;
    }
    res.write(`data: ${JSON.stringify({ choices: [], usage })}\n\ndata: [DONE]\n\n`);
    res.end();
    sent.set(key, t);
  });
});

async function main(): Promise<void> {
  mkdirSync(tmp, { recursive: true });
  await new Promise<void>((r) => provider.listen(0, "127.0.0.1", r));
  const port = (provider.address() as AddressInfo).port;
  log("compiling the streaming bench workflows and bundling bench/entry.ts");
  const mf = await startOwnWorker(
    tmp,
    {
      "gateway.yaml": GATEWAY,
      "bench-stream.workflow.yaml": workflow("bench-stream", true),
      "bench-no-stream.workflow.yaml": workflow("bench-no-stream", false),
    },
    { MODEL_BASE_URL: `http://127.0.0.1:${port}`, MODEL_API_KEY: "bench-model-key-0001" },
  );
  try {
    const base = (await mf.ready).origin;
    const now = () => performance.timeOrigin + performance.now();
    const rows = (runId: string) => rowsWritten(base, runId);
    const oneRun = async () => {
      const key = `k-${crypto.randomUUID()}`;
      const res = await fetch(`${base}/invoke/bench-stream`, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "text/event-stream" },
        body: JSON.stringify({ key }),
      });
      const reader = (res.body as ReadableStream<Uint8Array>).getReader();
      const decoder = new TextDecoder();
      let buffer = "";
      let firstDelta = 0;
      let lastDelta = 0;
      let runId = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        const at = now();
        buffer += decoder.decode(value, { stream: true });
        for (let cut = buffer.indexOf("\n\n"); cut >= 0; cut = buffer.indexOf("\n\n")) {
          const block = buffer.slice(0, cut);
          buffer = buffer.slice(cut + 2);
          if (block.includes("event: output.delta")) {
            if (firstDelta === 0) firstDelta = at;
            lastDelta = at;
          }
          const m = /"run_id":"([^"]+)"/.exec(block);
          if (m && runId === "") runId = m[1] as string;
        }
      }
      const t = sent.get(key);
      if (!t || firstDelta === 0) throw new Error(`run ${runId}: no delta (${JSON.stringify(t)})`);
      return { toFirst: firstDelta - t.first, toEnd: lastDelta - t.last, rows: await rows(runId) };
    };
    const health = async () => {
      const t0 = now();
      await (await fetch(`${base}/health`)).text();
      return now() - t0;
    };
    await oneRun();
    const samples: Array<{ toFirst: number; toEnd: number; rows: number }> = [];
    const healths: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      healths.push(await health());
      samples.push(await oneRun());
    }
    const plain = await fetch(`${base}/invoke/bench-no-stream`, {
      method: "POST",
      headers: { "content-type": "application/json", prefer: "wait=30" },
      body: JSON.stringify({ key: "plain" }),
    });
    const plainRows = await rows(((await plain.json()) as { run_id: string }).run_id);
    const first = median(samples.map((s) => s.toFirst));
    const end = median(samples.map((s) => s.toEnd));
    const rtt = median(healths);
    const streamRows = median(samples.map((s) => s.rows));
    const f = (n: number) => n.toFixed(2);
    const machine = machineLine();
    const md = `# What streaming costs

\`npm run bench:streaming\` (bench/streaming.ts) on ${new Date().toISOString().slice(0, 10)}${quick ? " (--quick)" : ""}:
one local workerd (Miniflare) serving bench/entry.ts; a fake OpenAI-compatible provider on 127.0.0.1
streams ${CHUNKS} chunks ${GAP_MS} ms apart after a ${FIRST_MS} ms first chunk; ${RUNS} invokes with
\`Accept: text/event-stream\` of a one-step workflow whose agent step has \`stream: true\`.

| | p50 |
|---|---:|
| the provider's first chunk to the first \`output.delta\` at the caller | ${f(first)} ms |
| the same, net of a \`/health\` round trip (${f(rtt)} ms) | ${f(first - rtt)} ms (target ≤ 5) |
| the provider's last chunk to the stream's last delta at the caller | ${f(end)} ms (target ≤ 5) |
| rows written per run, streaming / the same run without \`stream\` | ${streamRows} / ${plainRows} |

Both ends of each interval are read on this machine's clock (the provider and the caller run in
this process). Machine: ${machine}.
`;
    writeFileSync(resultsPath("streaming-results.md"), md);
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
