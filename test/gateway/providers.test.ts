/**
 * Provider wire formats that the stub-driven workers tests do not pin down: when OpenAI gets
 * strict structured outputs, and how each provider's reply is read.
 */
import { describe, expect, it } from "vitest";
import type { CompiledProvider } from "../../src/bundle.ts";
import { parseMessage } from "../../src/gateway/anthropic.ts";
import { parseChatCompletion, prepareOpenAi, responseFormat } from "../../src/gateway/openai.ts";
import type { ModelRequest } from "../../src/gateway/provider.ts";
import { parseAiResult } from "../../src/gateway/workers-ai.ts";

const strictSchema = {
  type: "object",
  properties: {
    label: { type: "string", enum: ["a", "b"] },
    tags: { type: "array", items: { type: "string" } },
  },
  required: ["label", "tags"],
  additionalProperties: false,
};

function req(over: Partial<ModelRequest>): ModelRequest {
  return { system: null, messages: [], maxTokens: 10, json: true, jsonSchema: null, ...over };
}

describe("OpenAI response_format", () => {
  it("uses strict json_schema when every object closes its properties and requires them all", () => {
    expect(responseFormat(req({ jsonSchema: strictSchema }))).toEqual({
      type: "json_schema",
      json_schema: { name: "output", strict: true, schema: strictSchema },
    });
  });

  it("falls back to json_object when a property is optional", () => {
    const schema = { ...strictSchema, required: ["label"] };
    expect(responseFormat(req({ jsonSchema: schema }))).toEqual({ type: "json_object" });
  });

  it("falls back to json_object for keywords strict mode does not support", () => {
    const schema = {
      ...strictSchema,
      properties: { ...strictSchema.properties, label: { type: "string", minLength: 2 } },
    };
    expect(responseFormat(req({ jsonSchema: schema }))).toEqual({ type: "json_object" });
  });

  it("asks for no JSON mode when the output is not an object (json_object would force one)", () => {
    expect(responseFormat(req({ jsonSchema: { type: "array" } }))).toBeNull();
  });

  it("asks for no JSON mode for plain text replies", () => {
    expect(responseFormat(req({ json: false, jsonSchema: strictSchema }))).toBeNull();
  });

  it("drops $schema from the schema it sends", () => {
    const withDialect = { $schema: "https://json-schema.org/draft/2020-12/schema", ...strictSchema };
    expect(responseFormat(req({ jsonSchema: withDialect }))).toMatchObject({
      json_schema: { schema: strictSchema },
    });
  });
});

describe("reading replies", () => {
  it("reads an OpenAI chat completion's text and usage", () => {
    const body = {
      choices: [{ message: { role: "assistant", content: "hi" } }],
      usage: { prompt_tokens: 7, completion_tokens: 2 },
    };
    expect(parseChatCompletion(body)).toEqual({
      text: "hi",
      usage: { input_tokens: 7, output_tokens: 2 },
      toolCalls: [],
    });
  });

  it("reports missing usage as unknown so the gateway can charge the worst case", () => {
    expect(parseChatCompletion({ choices: [{ message: { content: "hi" } }] })?.usage).toBeNull();
  });

  it("joins the text blocks of an Anthropic message and skips other blocks (a tool_use without a name is no call)", () => {
    const body = {
      content: [
        { type: "text", text: "{" },
        { type: "tool_use", id: "x" },
        { type: "text", text: "}" },
      ],
      usage: { input_tokens: 3, output_tokens: 1 },
    };
    expect(parseMessage(body)).toEqual({
      text: "{}",
      usage: { input_tokens: 3, output_tokens: 1 },
      toolCalls: [],
    });
  });

  it("turns a Workers AI reply that is already an object back into JSON text", () => {
    expect(parseAiResult({ response: { a: 1 } })).toEqual({ text: '{"a":1}', usage: null, toolCalls: [] });
  });
});

describe("OpenAI-compatible providers: the field of the output token limit", () => {
  /** What `prepareOpenAi` puts on the wire, read through the adapter's own fetch port. */
  async function sent(provider: CompiledProvider, model: string) {
    const seen: Array<{ url: string; body: Record<string, unknown> }> = [];
    await prepareOpenAi(model, req({ json: false, maxTokens: 64 }), provider, {}).send({
      fetch: async (input, init) => {
        seen.push({ url: String(input), body: JSON.parse(String(init?.body)) });
        return Response.json({ choices: [{ message: { content: "hi" } }] });
      },
      signal: new AbortController().signal,
      deadline: Date.now() + 10_000,
      onAttempt: () => {},
    });
    return seen[0];
  }
  const entry = (over: Partial<CompiledProvider>): CompiledProvider => ({
    name: "p",
    type: "openai",
    baseUrl: null,
    apiKeyEnv: null,
    ...over,
  });

  it("sends max_completion_tokens to OpenAI's own API, for every model", async () => {
    for (const baseUrl of [null, "https://api.openai.com/v1"]) {
      const call = await sent(entry({ baseUrl }), "gpt-4o-mini");
      expect(call?.url).toBe("https://api.openai.com/v1/chat/completions");
      expect(call?.body.max_completion_tokens).toBe(64);
      expect(call?.body).not.toHaveProperty("max_tokens");
    }
  });

  it("sends max_tokens to another server, and max_completion_tokens there only for o-series and gpt-5 models", async () => {
    const local = entry({ baseUrl: "http://127.0.0.1:11434/v1" });
    expect((await sent(local, "llama3.2"))?.body).toMatchObject({ max_tokens: 64 });
    for (const model of ["openai/gpt-5", "gpt-5.1-mini", "o1", "o4-mini"]) {
      const call = await sent(local, model);
      expect(call?.body.max_completion_tokens).toBe(64);
      expect(call?.body).not.toHaveProperty("max_tokens");
    }
    expect((await sent(local, "olmo2"))?.body).toMatchObject({ max_tokens: 64 });
  });

  it("lets the entry's max_tokens_field decide, also on OpenAI's own API", async () => {
    const call = await sent(entry({ maxTokensField: "max_tokens" }), "gpt-4o-mini");
    expect(call?.body).toMatchObject({ max_tokens: 64 });
    expect(call?.body).not.toHaveProperty("max_completion_tokens");
  });
});
