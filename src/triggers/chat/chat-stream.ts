/**
 * `stream: true` on `/v1/chat/completions` (docs/protocols.md, "Streaming"): 200
 * `text/event-stream` at once, `chat.completion.chunk`s that all carry the same `id`: the
 * assistant's role first, then the reply's text, then `finish_reason: "stop"`, with
 * `stream_options.include_usage` a last chunk with `choices: []` and the run's usage, then
 * `data: [DONE]`. When the reply is a string field of a streaming agent step's output (the compiler
 * says which: `invoke.chat.stream`), that field's text goes out as the model writes it, read from
 * its partial JSON (src/common/json-field-stream.ts) and masked again once decoded (an escaped
 * secret is a secret once decoded); the deltas joined are the final reply. Otherwise the whole
 * reply is one chunk at the run's end, with `: running` comments at least every 10 s before it.
 * A repair after text was sent, a failed or canceled run: a last chunk `{"error": {…}}` and no
 * `[DONE]` (the OpenAI clients raise it); the run goes on, its envelope holds what it ended with.
 */
import type { Bundle, CompiledWorkflow, JsonObject } from "../../bundle.ts";
import { JsonFieldStream } from "../../common/json-field-stream.ts";
import { HttpProblem } from "../../common/problem.ts";
import { createMasker } from "../../engine/mask.ts";
import { collectSecrets } from "../../engine/secrets.ts";
import { createStreamMasker } from "../../engine/stream-mask.ts";
import type { Envelope } from "../../run/envelope.ts";
import { runEnd, runEvents } from "../protocol-run.ts";
import { chatReply, runHeaders, usageOf } from "./chat-reply.ts";

/** The longest a stream stays silent while its run works (docs/protocols.md: a comment at least every 10 s). */
const KEEPALIVE_MS = 9_000;

const encoder = new TextEncoder();

export function chatStream(
  env: Env,
  bundle: Bundle,
  wf: CompiledWorkflow,
  runId: string,
  includeUsage: boolean,
): Response {
  const { readable, writable } = new TransformStream<Uint8Array, Uint8Array>();
  const writer = writable.getWriter();
  const stop = new AbortController();
  // The caller went away: stop following the run (the run itself goes on).
  writer.closed.catch(() => stop.abort());
  const secrets = collectSecrets(bundle, wf, env as unknown as Record<string, unknown>).values;
  const out = new ChunkWriter(writer, `chatcmpl-${runId}`, wf.name, includeUsage);
  follow(env, wf, runId, out, secrets, stop.signal)
    .catch(() => out.error("internal_error", "the server failed to follow the run"))
    .finally(() => out.close());
  return new Response(readable, {
    headers: {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-store",
      "x-accel-buffering": "no",
      ...runHeaders(runId),
    },
  });
}

async function follow(
  env: Env,
  wf: CompiledWorkflow,
  runId: string,
  out: ChunkWriter,
  secrets: string[],
  signal: AbortSignal,
): Promise<void> {
  await out.chunk({ role: "assistant", content: "" });
  const field = wf.chat?.stream ?? null;
  const fresh = () => {
    const json = field?.field ? new JsonFieldStream(field.field) : null;
    return {
      read: (text: string) => (json ? json.push(text) : text),
      mask: createStreamMasker(createMasker(secrets)),
    };
  };
  let reading = fresh();
  let sent = "";
  let envelope: Envelope | null = null;
  for await (const ev of runEvents(env, runId, signal)) {
    if (ev.type === "run.completed") {
      envelope = ev.data as unknown as Envelope;
      break;
    }
    if (!field || ev.data.step !== field.step) continue;
    if (ev.type === "output.delta" && typeof ev.data.text === "string") {
      const text = reading.mask.push(reading.read(ev.data.text));
      if (text === "") continue;
      sent += text;
      await out.chunk({ content: text });
    } else if (ev.type === "output.reset") {
      // A repair or a fallback model starts the answer over: fine until some of it was shown.
      if (sent !== "")
        return out.error("output_reset", "the answer was started over after part of it was sent");
      reading = fresh();
    }
  }
  if (signal.aborted) return;
  envelope ??= await runEnd(env, runId);
  if (!envelope) return out.error("run_not_found", "the run is gone");
  if (envelope.status !== "complete") {
    return out.error(
      envelope.error?.code ?? envelope.status,
      envelope.error?.message ?? `the run ${envelope.status}`,
    );
  }
  let reply: string;
  try {
    reply = chatReply(wf, envelope);
  } catch (e) {
    return out.error(
      "response_failed",
      e instanceof HttpProblem ? e.message : "the reply could not be rendered",
    );
  }
  if (!reply.startsWith(sent))
    return out.error("output_reset", "the final answer differs from the text sent");
  if (reply.length > sent.length) await out.chunk({ content: reply.slice(sent.length) });
  await out.chunk({}, "stop");
  await out.usage(envelope);
  await out.done();
}

/** Writes the stream's frames; a `: running` comment whenever nothing was written for a while. */
class ChunkWriter {
  private readonly created = Math.floor(Date.now() / 1000);
  private readonly timer: ReturnType<typeof setInterval>;
  private last = Date.now();
  private closed = false;
  private readonly writer: WritableStreamDefaultWriter<Uint8Array>;
  private readonly id: string;
  private readonly model: string;
  private readonly includeUsage: boolean;

  constructor(
    writer: WritableStreamDefaultWriter<Uint8Array>,
    id: string,
    model: string,
    includeUsage: boolean,
  ) {
    this.writer = writer;
    this.id = id;
    this.model = model;
    this.includeUsage = includeUsage;
    this.timer = setInterval(() => {
      if (Date.now() - this.last >= KEEPALIVE_MS) void this.write(": running\n\n");
    }, 1_000);
  }

  chunk(delta: JsonObject, finish: "stop" | null = null): Promise<void> {
    return this.data({
      ...this.head(),
      choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }],
      ...(this.includeUsage ? { usage: null } : {}),
    });
  }

  async usage(envelope: Envelope): Promise<void> {
    if (this.includeUsage) await this.data({ ...this.head(), choices: [], usage: usageOf(envelope) });
  }

  /** The stream's last frame when it does not end well: an error the clients raise (no `[DONE]`). */
  error(code: string, message: string): Promise<void> {
    return this.data({ error: { message, type: "server_error", param: null, code } });
  }

  done(): Promise<void> {
    return this.write("data: [DONE]\n\n");
  }

  close(): void {
    clearInterval(this.timer);
    if (this.closed) return;
    this.closed = true;
    this.writer.close().catch(() => {});
  }

  private head() {
    return { id: this.id, object: "chat.completion.chunk", created: this.created, model: this.model };
  }

  private data(value: object): Promise<void> {
    return this.write(`data: ${JSON.stringify(value)}\n\n`);
  }

  private async write(text: string): Promise<void> {
    if (this.closed) return;
    this.last = Date.now();
    await this.writer.write(encoder.encode(text)).catch(() => {
      this.closed = true;
    });
  }
}
