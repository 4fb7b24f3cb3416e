/**
 * What the protocols cost (`npm run bench:protocols`; docs/protocols.md), on one local workerd
 * (Miniflare) serving bench/entry.ts:
 *
 * - A 10-step transform workflow run four ways, interleaved: `POST /invoke/{name}` with
 *   `Prefer: wait`, `POST /v1/chat/completions`, MCP `tools/call` on `POST /mcp`, and A2A
 *   `SendMessage` on `POST /a2a/{name}`. p50 of each, and what each protocol adds over the invoke
 *   (targets: chat ≤ 1 ms, MCP ≤ 2 ms, A2A ≤ 2 ms). Rows written per run, each way (the same run:
 *   the same rows).
 * - A streamed chat answer (`stream: true`) of a `core/chat` step against a fake OpenAI-compatible
 *   provider on 127.0.0.1 that sends its first chunk of answer text after 300 ms, then 30 more 20 ms
 *   apart: the provider's first chunk to the first content delta at the caller, p50, net of a
 *   `/health` round trip (target ≤ 5 ms).
 *
 *   npm run bench:protocols               # 150 samples each, 30 streamed answers
 *   npm run bench:protocols -- --quick    # 20 and 5
 *
 * Writes bench/protocols-results.md. Not part of `npm test`. Network: 127.0.0.1 only.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { machineLine, ROOT, resultsPath } from "./dev-server.ts";
import { median } from "./latency.ts";
import { rowsWritten, startOwnWorker } from "./own-bundle.ts";

const quick = process.argv.includes("--quick");
const SAMPLES = Number(process.env.BENCH_SAMPLES ?? (quick ? 20 : 150));
const STREAMS = quick ? 5 : 30;
const WARMUP = 10;
const CHUNKS = 30;
const FIRST_MS = 300;
const GAP_MS = 20;
const tmp = join(ROOT, "bench/tmp/protocols");
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
    models: [fake/fake-stream]
    default_max_tokens: 500
    pricing:
      - { model: fake-stream, input_per_million: 1, output_per_million: 2 }
`;

const steps = Array.from(
  { length: 10 },
  (_, i) => `  - { id: s${i + 1}, transform: { ops: [{ map: { expr: "{n: \`${i + 1}\`}" } }] } }`,
).join("\n");

const TEN = `kind: workflow
name: bench-ten
params: { schema: { type: object, properties: { q: { type: string } } } }
invoke:
  chat: { params: { q: "{{ messages[-1].content }}" } }
  mcp: {}
  a2a: { params: { q: "{{ text }}" } }
pipeline:
${steps}
`;

const STREAMED = `kind: workflow
name: bench-chat-stream
params: { schema: { type: object, properties: { prompt: { type: string } } } }
invoke:
  chat: { params: { prompt: "{{ messages[-1].content }}" }, reply: "{{ output.text }}" }
pipeline:
  - id: answer
    agent: core/chat@1
    stream: true
    model: { group: fake }
    params: { prompt: "{{ params.prompt }}" }
`;

/** When the provider sent its first chunk of answer text, by the prompt. */
const firstSent = new Map<string, number>();

const provider = createServer((req, res) => {
  let body = "";
  req.on("data", (c) => {
    body += c;
  });
  req.on("end", async () => {
    const request = JSON.parse(body) as { messages: Array<{ content: string }> };
    const key = String(request.messages[request.messages.length - 1]?.content ?? "");
    res.writeHead(200, { "content-type": "text/event-stream" });
    await new Promise((r) => setTimeout(r, FIRST_MS));
    for (let i = 0; i < CHUNKS; i++) {
      if (i > 0) await new Promise((r) => setTimeout(r, GAP_MS));
      res.write(`data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: `word${i} ` } }] })}\n\n`);
      if (i === 0) firstSent.set(key, now());
    }
    const usage = { prompt_tokens: 10, completion_tokens: CHUNKS, total_tokens: 10 + CHUNKS };
    res.write(`data: ${JSON.stringify({ choices: [], usage })}\n\ndata: [DONE]\n\n`);
    res.end();
  });
});

async function main(): Promise<void> {
  mkdirSync(tmp, { recursive: true });
  await new Promise<void>((r) => provider.listen(0, "127.0.0.1", r));
  const port = (provider.address() as AddressInfo).port;
  log("compiling the protocol bench workflows and bundling bench/entry.ts");
  const mf = await startOwnWorker(
    tmp,
    { "gateway.yaml": GATEWAY, "bench-ten.workflow.yaml": TEN, "bench-chat-stream.workflow.yaml": STREAMED },
    { MODEL_BASE_URL: `http://127.0.0.1:${port}`, MODEL_API_KEY: "bench-model-key-0001" },
  );
  try {
    const base = (await mf.ready).origin;
    const json = { "content-type": "application/json" };
    const ways = {
      invoke: async (q: string) => {
        const res = await fetch(`${base}/invoke/bench-ten`, {
          method: "POST",
          headers: { ...json, prefer: "wait=30" },
          body: JSON.stringify({ q }),
        });
        return ((await res.json()) as { run_id: string }).run_id;
      },
      chat: async (q: string) => {
        const res = await fetch(`${base}/v1/chat/completions`, {
          method: "POST",
          headers: json,
          body: JSON.stringify({ model: "bench-ten", messages: [{ role: "user", content: q }] }),
        });
        await res.text();
        return res.headers.get("x-run-id") as string;
      },
      a2a: async (q: string) => {
        const res = await fetch(`${base}/a2a/bench-ten`, {
          method: "POST",
          headers: { ...json, "a2a-version": "1.0" },
          body: JSON.stringify({
            jsonrpc: "2.0",
            id: 1,
            method: "SendMessage",
            params: { message: { messageId: crypto.randomUUID(), role: "ROLE_USER", parts: [{ text: q }] } },
          }),
        });
        const body = (await res.json()) as { result: { task: { id: string } } };
        return body.result.task.id;
      },
      mcp: async (q: string) => {
        const res = await fetch(`${base}/mcp`, {
          method: "POST",
          headers: { ...json, accept: "application/json, text/event-stream" },
          body: JSON.stringify({
            jsonrpc: "2.0",
            id: 1,
            method: "tools/call",
            params: { name: "bench-ten", arguments: { q } },
          }),
        });
        const body = (await res.json()) as { result: { _meta: Record<string, string> } };
        return body.result._meta["io.workflow-edge/run_id"] as string;
      },
    };
    const health = async () => {
      const t0 = now();
      await (await fetch(`${base}/health`)).text();
      return now() - t0;
    };
    const times: Record<keyof typeof ways, number[]> = { invoke: [], chat: [], a2a: [], mcp: [] };
    const lastRun: Record<string, string> = {};
    log(`${SAMPLES} samples of each way, interleaved`);
    for (let i = 0; i < WARMUP + SAMPLES; i++) {
      for (const [name, way] of Object.entries(ways) as Array<
        [keyof typeof ways, (q: string) => Promise<string>]
      >) {
        const t0 = now();
        lastRun[name] = await way(`q${i}`);
        if (i >= WARMUP) times[name].push(now() - t0);
      }
    }
    const rows = Object.fromEntries(
      await Promise.all(
        Object.entries(lastRun).map(async ([k, id]) => [k, await rowsWritten(base, id)] as const),
      ),
    );

    log(`${STREAMS} streamed chat answers`);
    const oneStream = async () => {
      const key = `k-${crypto.randomUUID()}`;
      const res = await fetch(`${base}/v1/chat/completions`, {
        method: "POST",
        headers: json,
        body: JSON.stringify({
          model: "bench-chat-stream",
          stream: true,
          messages: [{ role: "user", content: key }],
        }),
      });
      const reader = (res.body as ReadableStream<Uint8Array>).getReader();
      const decoder = new TextDecoder();
      let buffer = "";
      let first = 0;
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        const at = now();
        buffer += decoder.decode(value, { stream: true });
        if (first === 0 && /"delta":\{"content":"word/.test(buffer)) first = at;
      }
      const sent = firstSent.get(key);
      if (!sent || first === 0) throw new Error(`no content delta for ${key}`);
      return first - sent;
    };
    await oneStream();
    const toFirst: number[] = [];
    const healths: number[] = [];
    for (let i = 0; i < STREAMS; i++) {
      healths.push(await health());
      toFirst.push(await oneStream());
    }
    const rtt = median(healths);
    const p = (name: keyof typeof ways) => median(times[name]);
    const f = (n: number) => n.toFixed(2);
    const md = `# What the protocols cost

\`npm run bench:protocols\` (bench/protocols.ts) on ${new Date().toISOString().slice(0, 10)}${quick ? " (--quick)" : ""}:
one local workerd (Miniflare) serving bench/entry.ts. A 10-step transform workflow, ${SAMPLES} runs each
way, interleaved (after ${WARMUP} of each to warm up), one at a time; a \`core/chat\` step with
\`stream: true\` against a fake OpenAI-compatible provider on 127.0.0.1 (first chunk after ${FIRST_MS} ms,
then ${CHUNKS - 1} more ${GAP_MS} ms apart), ${STREAMS} streamed answers.

| | p50 | over the invoke |
|---|---:|---:|
| \`POST /invoke/bench-ten\` with \`Prefer: wait\` | ${f(p("invoke"))} ms | |
| \`POST /v1/chat/completions\` | ${f(p("chat"))} ms | ${f(p("chat") - p("invoke"))} ms (target ≤ 1) |
| MCP \`tools/call\` on \`POST /mcp\` | ${f(p("mcp"))} ms | ${f(p("mcp") - p("invoke"))} ms (target ≤ 2) |
| A2A \`SendMessage\` on \`POST /a2a/bench-ten\` | ${f(p("a2a"))} ms | ${f(p("a2a") - p("invoke"))} ms (target ≤ 2) |

| streamed chat answer | p50 |
|---|---:|
| the provider's first chunk of answer text to the first content delta at the caller | ${f(median(toFirst))} ms |
| the same, net of a \`/health\` round trip (${f(rtt)} ms) | ${f(median(toFirst) - rtt)} ms (target ≤ 5) |

Rows written per run: invoke ${rows.invoke}, chat ${rows.chat}, MCP ${rows.mcp}, A2A ${rows.a2a} (the same run each
way; an A2A task without push configs writes nothing for them).
Machine: ${machineLine()}.
`;
    writeFileSync(resultsPath("protocols-results.md"), md);
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
