/**
 * `stream: true` on /v1/chat/completions (docs/protocols.md, "Streaming") through the `openai`
 * client: the reply's field as the model writes it (the model stub writes 4 characters at a time,
 * CHUNK_MS apart), masked, the deltas joined equal to the final reply; a repair, a failed run.
 */
import { env } from "cloudflare:workers";
import OpenAI from "openai";
import type { ChatCompletionChunk } from "openai/resources/chat/completions";
import { describe, expect, it } from "vitest";
import { call, TOKEN, waitForRun } from "../../worker/harness.ts";

const SECRET = (env as unknown as Record<string, string>).LEAK_SECRET as string;

const client = new OpenAI({
  apiKey: TOKEN,
  baseURL: "http://workflow.test/v1",
  fetch: (input, init) => call(new URL(input instanceof Request ? input.url : String(input)).pathname, init),
});

async function envelopeOf(runId: string) {
  const res = await call(`/runs/${runId}`, { headers: { authorization: `Bearer ${TOKEN}` } });
  // biome-ignore lint/suspicious/noExplicitAny: the envelope is checked field by field
  return (await res.json()) as any;
}

interface Read {
  chunks: ChatCompletionChunk[];
  text: string;
  /** When the first piece of the reply's text reached the client. */
  firstTextAt: number | null;
  runId: string;
  error: unknown;
}

async function readStream(model: string, content: string, includeUsage = true): Promise<Read> {
  const { data: stream, response } = await client.chat.completions
    .create({
      model,
      messages: [{ role: "user", content }],
      stream: true,
      ...(includeUsage ? { stream_options: { include_usage: true } } : {}),
    })
    .withResponse();
  const read: Read = {
    chunks: [],
    text: "",
    firstTextAt: null,
    runId: response.headers.get("x-run-id") ?? "",
    error: null,
  };
  try {
    for await (const chunk of stream) {
      read.chunks.push(chunk);
      const piece = chunk.choices[0]?.delta.content;
      if (piece) {
        read.firstTextAt ??= Date.now();
        read.text += piece;
      }
    }
  } catch (e) {
    read.error = e;
  }
  return read;
}

const reply = (title: string) => `REPLY=${JSON.stringify({ title, priority: "low" })}`;

describe("a streamed chat answer", () => {
  it("sends the reply's field as the model writes it, masked, its pieces joined equal to the final reply", async () => {
    const title = `The key is ${SECRET}, and it must never be shown, not even in pieces.`;
    const read = await readStream("chat-stream", `CHUNK_MS=40\n${reply(title)}`);
    expect(read.error).toBeNull();
    const envelope = await envelopeOf(read.runId);
    expect(envelope.status).toBe("complete");
    // The final reply, as the run's (masked) output holds it, is exactly what was streamed.
    expect(read.text).toBe(envelope.output.title);
    expect(read.text).toContain("***");
    expect(read.text).not.toContain(SECRET);
    expect(read.text.startsWith("The key is ")).toBe(true);
    // Many pieces, and the first before the step had finished: it was read from the partial JSON.
    const pieces = read.chunks.filter((c) => c.choices[0]?.delta.content);
    expect(pieces.length).toBeGreaterThan(5);
    expect(read.firstTextAt).toBeLessThan(Date.parse(envelope.steps[0].finished_at));
    // The chunks' shape: one id, the role first, `stop`, then the usage with no choices.
    expect(new Set(read.chunks.map((c) => c.id))).toEqual(new Set([`chatcmpl-${read.runId}`]));
    expect(read.chunks[0]?.choices[0]?.delta).toEqual({ role: "assistant", content: "" });
    const finish = read.chunks.at(-2);
    expect(finish?.choices[0]?.finish_reason).toBe("stop");
    expect(read.chunks.slice(0, -1).every((c) => c.usage === null)).toBe(true);
    expect(read.chunks.at(-1)).toMatchObject({
      choices: [],
      usage: { prompt_tokens: 1000, completion_tokens: 500, total_tokens: 1500 },
    });
  });

  it("streams core/chat's text as the model writes it", async () => {
    const prompt = "CHUNK_MS=20 a plain answer, written four characters at a time";
    const read = await readStream("chat-echo", prompt, false);
    expect(read.error).toBeNull();
    expect(read.text).toBe(prompt);
    expect(read.chunks.filter((c) => c.choices[0]?.delta.content).length).toBeGreaterThan(5);
    // Without include_usage: no usage chunk, no usage field.
    expect(read.chunks.every((c) => c.choices.length === 1 && !("usage" in c))).toBe(true);
  });

  it("sends a reply it cannot read as it is written as one piece at the run's end", async () => {
    const read = await readStream("chat-transform", "one piece", false);
    expect(read.error).toBeNull();
    const pieces = read.chunks.filter((c) => c.choices[0]?.delta.content);
    expect(pieces.map((c) => c.choices[0]?.delta.content)).toEqual(["You asked: one piece"]);
  });

  it("goes on unnoticed when the model's answer is repaired before any of the reply was sent", async () => {
    const read = await readStream("chat-repair", `CHUNK_MS=5\n${reply("repaired at once")}`);
    expect(read.error).toBeNull();
    expect(read.text).toBe("repaired at once");
  });

  it("ends with an output_reset error when a repair follows text already sent; the run keeps the repaired answer", async () => {
    const read = await readStream(
      "chat-repair",
      `CHUNK_MS=5\nBAD={"title": "half an answer that breaks\n${reply("the repaired answer")}`,
    );
    // What was sent of the broken answer (its end may be held back: it could start a secret).
    expect(read.text.length).toBeGreaterThan(10);
    expect("half an answer that breaks".startsWith(read.text)).toBe(true);
    expect(read.error).toBeInstanceOf(OpenAI.APIError);
    expect((read.error as InstanceType<typeof OpenAI.APIError>).code).toBe("output_reset");
    // The run goes on past the stream's end, to the repaired answer.
    const envelope = await waitForRun(read.runId, { authorization: `Bearer ${TOKEN}` });
    expect(envelope.status).toBe("complete");
    expect(envelope.output.title).toBe("the repaired answer");
  });

  it("ends a failed run's stream with its error code, without [DONE]", async () => {
    const read = await readStream("chat-fail", `stream-fail-${crypto.randomUUID()}`, false);
    expect(read.error).toBeInstanceOf(OpenAI.APIError);
    const envelope = await envelopeOf(read.runId);
    expect(envelope.status).toBe("failed");
    expect((read.error as InstanceType<typeof OpenAI.APIError>).code).toBe(envelope.error.code);
    expect(read.chunks.some((c) => c.choices[0]?.finish_reason === "stop")).toBe(false);
  });
});
