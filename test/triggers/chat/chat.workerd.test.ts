/**
 * The OpenAI-compatible endpoint (docs/protocols.md) through the clients people use: the `openai`
 * npm client and the Vercel AI SDK's `@ai-sdk/openai-compatible`, pointed at the Worker with a base
 * URL and a key, exactly as a chat UI or an agent framework would be.
 */
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { generateText } from "ai";
import OpenAI from "openai";
import { describe, expect, it } from "vitest";
import { call, TARGET, TOKEN, targetLog, uniqueKey } from "../../worker/harness.ts";

const workerFetch = (input: RequestInfo | URL, init?: RequestInit) => call(pathOf(input), init);

function pathOf(input: RequestInfo | URL): string {
  const url = new URL(input instanceof Request ? input.url : String(input));
  return url.pathname + url.search;
}

function client(apiKey = TOKEN, opts: { maxRetries?: number } = {}) {
  return new OpenAI({ apiKey, baseURL: "http://workflow.test/v1", fetch: workerFetch, ...opts });
}

const ask = (content: unknown) => ({
  model: "chat-transform",
  messages: [{ role: "user" as const, content: content as string }],
});

async function envelopeOf(runId: string) {
  const res = await call(`/runs/${runId}`, { headers: { authorization: `Bearer ${TOKEN}` } });
  expect(res.status).toBe(200);
  // biome-ignore lint/suspicious/noExplicitAny: the envelope is checked field by field
  return (await res.json()) as any;
}

describe("POST /v1/chat/completions", () => {
  it("answers with the run's reply as a chat.completion whose request id is the run", async () => {
    const { data, response, request_id } = await client()
      .chat.completions.create(ask("What is 2+2?"))
      .withResponse();
    const runId = response.headers.get("x-run-id") as string;
    expect(request_id).toBe(runId);
    expect(data.id).toBe(`chatcmpl-${runId}`);
    expect(data.object).toBe("chat.completion");
    expect(data.model).toBe("chat-transform");
    expect(data.choices).toEqual([
      {
        index: 0,
        message: { role: "assistant", content: "You asked: What is 2+2?", refusal: null },
        finish_reason: "stop",
        logprobs: null,
      },
    ]);
    const envelope = await envelopeOf(runId);
    expect(envelope.status).toBe("complete");
    expect(data.created).toBe(Math.floor(Date.parse(envelope.created_at) / 1000));
    // The params templates rendered over the request: the last message's text and every message.
    expect(envelope.params).toEqual({
      question: "What is 2+2?",
      history: [{ role: "user", content: "What is 2+2?" }],
    });
    expect(data.usage).toEqual({
      prompt_tokens: envelope.totals.tokens_in,
      completion_tokens: envelope.totals.tokens_out,
      total_tokens: envelope.totals.tokens_in + envelope.totals.tokens_out,
    });
  });

  it("reads a message given as parts as its text parts joined with newlines", async () => {
    const parts = [
      { type: "text", text: "first line" },
      { type: "image_url", image_url: { url: "https://example.com/cat.png" } },
      { type: "text", text: "second line" },
    ];
    const reply = await client().chat.completions.create(ask(parts));
    expect(reply.choices[0]?.message.content).toBe("You asked: first line\nsecond line");
  });

  it("ignores the request fields a workflow has no use for", async () => {
    const reply = await client().chat.completions.create({
      ...ask("still fine?"),
      temperature: 0.2,
      max_tokens: 5,
      n: 1,
      tools: [{ type: "function", function: { name: "noop", parameters: { type: "object" } } }],
      user: "someone",
    });
    expect(reply.choices[0]?.message.content).toBe("You asked: still fine?");
  });

  it("runs a public model with the defaults: the messages as params, the output's JSON as the reply", async () => {
    const reply = await client("no key needed").chat.completions.create({
      model: "chat-public",
      messages: [
        { role: "system", content: "be brief" },
        { role: "user", content: "hi" },
      ],
    });
    expect(JSON.parse(reply.choices[0]?.message.content ?? "")).toEqual({
      result: { messages: 2, last: "hi" },
    });
  });

  it("reaches the run that exists for a repeated Idempotency-Key", async () => {
    const headers = { "Idempotency-Key": uniqueKey("chat-idem") };
    const first = await client().chat.completions.create(ask("once"), { headers }).withResponse();
    const again = await client().chat.completions.create(ask("once"), { headers }).withResponse();
    expect(again.request_id).toBe(first.request_id);
    expect(again.data.choices[0]?.message.content).toBe("You asked: once");
    const other = await client()
      .chat.completions.create(ask("another body"), { headers })
      .catch((e) => e);
    expect(other).toBeInstanceOf(OpenAI.ConflictError);
    expect(other.code).toBe("idempotency_conflict");
  });
});

describe("errors in OpenAI's shape", () => {
  it("names an unknown model, or one that is not served as a model, as not found", async () => {
    for (const model of ["no-such-workflow", "basic"]) {
      const e = await client()
        .chat.completions.create({ model, messages: [{ role: "user", content: "x" }] })
        .catch((x) => x);
      expect(e).toBeInstanceOf(OpenAI.NotFoundError);
      expect(e.code).toBe("workflow_not_found");
      expect(e.type).toBe("not_found_error");
      expect(e.param).toBe("model");
    }
  });

  it("refuses a wrong key with 401 and says nothing of the key", async () => {
    const e = await client("wrong-key-123456")
      .chat.completions.create(ask("x"))
      .catch((x) => x);
    expect(e).toBeInstanceOf(OpenAI.AuthenticationError);
    expect(e.code).toBe("unauthorized");
    expect(e.type).toBe("authentication_error");
    expect(JSON.stringify(e.error)).not.toContain("wrong-key-123456");
  });

  it("answers params that fail params.schema with 422 naming the failing path", async () => {
    const e = await client()
      .chat.completions.create(ask(""))
      .catch((x) => x);
    expect(e).toBeInstanceOf(OpenAI.UnprocessableEntityError);
    expect(e.code).toBe("invalid_params");
    expect(e.type).toBe("invalid_request_error");
    expect(e.param).toBe("/question");
  });

  it("answers a body that is not a chat request with 400", async () => {
    const bad = await client()
      .chat.completions.create({ model: "chat-transform" } as never)
      .catch((x) => x);
    expect(bad).toBeInstanceOf(OpenAI.BadRequestError);
    expect(bad.code).toBe("invalid_request");
    expect(bad.param).toBe("messages");
    const res = await call("/v1/chat/completions", {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
      body: '{"model": "chat-transform", "messages": [',
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: Record<string, unknown> };
    expect(body.error).toMatchObject({ type: "invalid_request_error", code: "invalid_json", param: null });
  });

  it("answers over the rate limit with 429 and Retry-After", async () => {
    const key = uniqueKey("chat-limit");
    const body = { model: "chat-limited", messages: [{ role: "user" as const, content: key }] };
    await client("any", { maxRetries: 0 }).chat.completions.create(body);
    const e = await client("any", { maxRetries: 0 })
      .chat.completions.create(body)
      .catch((x) => x);
    expect(e).toBeInstanceOf(OpenAI.RateLimitError);
    expect(e.code).toBe("rate_limited");
    expect(e.headers.get("retry-after")).toBe("60");
  });

  it("answers a failed run with 500 once: the client does not retry it into three runs", async () => {
    const key = uniqueKey("chat-fail");
    const e = await client("any")
      .chat.completions.create({ model: "chat-fail", messages: [{ role: "user", content: key }] })
      .catch((x) => x);
    expect(e).toBeInstanceOf(OpenAI.InternalServerError);
    expect(e.type).toBe("server_error");
    expect(e.headers.get("x-should-retry")).toBe("false");
    const runId = e.headers.get("x-run-id");
    const envelope = await envelopeOf(runId);
    expect(envelope.status).toBe("failed");
    expect(e.code).toBe(envelope.error.code);
    // One run, one request to the failing target: the client's two retries did not happen.
    expect(await targetLog(key)).toHaveLength(1);
    expect(TARGET).toBeTruthy();
  });
});

describe("GET /v1/models", () => {
  it("lists every workflow served as a model, and finds one by name", async () => {
    const ids: string[] = [];
    for await (const m of client("anyone").models.list()) {
      expect(m).toMatchObject({ object: "model", owned_by: "workflow-edge" });
      expect(typeof m.created).toBe("number");
      ids.push(m.id);
    }
    expect(ids).toEqual(expect.arrayContaining(["chat-transform", "chat-public", "chat-stream"]));
    expect(ids).not.toContain("basic");
    expect(await client("anyone").models.retrieve("chat-transform")).toMatchObject({ id: "chat-transform" });
    const missing = await client("anyone")
      .models.retrieve("basic")
      .catch((x) => x);
    expect(missing).toBeInstanceOf(OpenAI.NotFoundError);
    expect(missing.code).toBe("workflow_not_found");
  });
});

describe("the Vercel AI SDK's OpenAI-compatible provider", () => {
  it("generates the workflow's reply as text", async () => {
    const provider = createOpenAICompatible({
      name: "workflow-edge",
      baseURL: "http://workflow.test/v1",
      apiKey: TOKEN,
      fetch: workerFetch as typeof fetch,
    });
    const { text } = await generateText({ model: provider("chat-transform"), prompt: "from the AI SDK" });
    expect(text).toBe("You asked: from the AI SDK");
  });
});
