/**
 * Native tool calling in each provider's own form (docs/agents-and-tools.md): how offered tools, the model's calls
 * and the tool results are written for OpenAI Chat Completions, the Anthropic Messages API and
 * Workers AI, and how their replies' tool calls are read back.
 */
import { describe, expect, it } from "vitest";
import type { CompiledProvider } from "../../src/bundle.ts";
import { anthropicMessages, parseMessage, prepareAnthropic } from "../../src/gateway/anthropic.ts";
import { openAiMessages, parseChatCompletion, prepareOpenAi } from "../../src/gateway/openai.ts";
import type { ChatMessage, ModelRequest } from "../../src/gateway/provider.ts";
import { parseAiResult, prepareWorkersAi } from "../../src/gateway/workers-ai.ts";

const conversation: ChatMessage[] = [
  { role: "user", content: "add 2 and 3" },
  {
    role: "assistant",
    content: "",
    toolCalls: [{ id: "call_1", name: "get-sum", arguments: { a: 2, b: 3 } }],
  },
  { role: "tool", results: [{ callId: "call_1", name: "get-sum", content: "5", isError: false }] },
  { role: "assistant", content: "checking", toolCalls: [{ id: "call_2", name: "delete", arguments: {} }] },
  { role: "tool", results: [{ callId: "call_2", name: "delete", content: "rejected", isError: true }] },
];

const request: ModelRequest = {
  system: "sys",
  messages: conversation,
  maxTokens: 100,
  json: false,
  jsonSchema: null,
  tools: [
    {
      name: "get-sum",
      description: "Adds",
      parameters: { type: "object", properties: { a: { type: "number" } } },
    },
  ],
};

function provider(type: CompiledProvider["type"]): CompiledProvider {
  return { name: "p", type, baseUrl: "http://model.test", apiKeyEnv: null };
}

async function sentBody(prepared: ReturnType<typeof prepareOpenAi>): Promise<Record<string, unknown>> {
  let body = "";
  await prepared
    .send({
      fetch: async (_url, init) => {
        body = String(init?.body ?? "");
        return Response.json({
          choices: [{ message: { content: "ok" } }],
          content: [{ type: "text", text: "ok" }],
        });
      },
      signal: new AbortController().signal,
      deadline: Date.now() + 10_000,
      onAttempt: () => {},
    })
    .catch(() => {});
  return JSON.parse(body);
}

describe("OpenAI Chat Completions", () => {
  it("offers tools as functions and writes calls and results as tool_calls and role tool", async () => {
    const body = await sentBody(prepareOpenAi("m", request, provider("openai"), {}));
    expect(body.tools).toEqual([
      {
        type: "function",
        function: {
          name: "get-sum",
          description: "Adds",
          parameters: { type: "object", properties: { a: { type: "number" } } },
        },
      },
    ]);
    expect(body.messages).toEqual([
      { role: "system", content: "sys" },
      { role: "user", content: "add 2 and 3" },
      {
        role: "assistant",
        content: null,
        tool_calls: [
          { id: "call_1", type: "function", function: { name: "get-sum", arguments: '{"a":2,"b":3}' } },
        ],
      },
      { role: "tool", tool_call_id: "call_1", content: "5" },
      {
        role: "assistant",
        content: "checking",
        tool_calls: [{ id: "call_2", type: "function", function: { name: "delete", arguments: "{}" } }],
      },
      { role: "tool", tool_call_id: "call_2", content: "ERROR: rejected" },
    ]);
  });

  it("sends no tools when none are offered", async () => {
    const body = await sentBody(prepareOpenAi("m", { ...request, tools: [] }, provider("openai"), {}));
    expect(body).not.toHaveProperty("tools");
  });

  it("reads tool_calls of a reply whose content is null, arguments parsed from JSON text", () => {
    const reply = parseChatCompletion({
      choices: [
        {
          message: {
            content: null,
            tool_calls: [
              { id: "c1", type: "function", function: { name: "echo", arguments: '{"message":"hi"}' } },
              { id: "c2", type: "function", function: { name: "echo", arguments: "{not json" } },
            ],
          },
        },
      ],
    });
    expect(reply?.text).toBe("");
    expect(reply?.toolCalls[0]).toEqual({ id: "c1", name: "echo", arguments: { message: "hi" } });
    expect(reply?.toolCalls[1]?.arguments).toEqual({});
    expect(reply?.toolCalls[1]?.invalidArguments).toMatch(/not JSON/);
  });
});

describe("Anthropic Messages", () => {
  it("offers tools with input_schema and writes tool_use and tool_result blocks (is_error on failures)", async () => {
    const body = await sentBody(prepareAnthropic("m", request, provider("anthropic"), {}));
    expect(body.tools).toEqual([
      {
        name: "get-sum",
        description: "Adds",
        input_schema: { type: "object", properties: { a: { type: "number" } } },
      },
    ]);
    expect(body.messages).toEqual(anthropicMessages(conversation));
    expect(body.messages).toEqual([
      { role: "user", content: "add 2 and 3" },
      {
        role: "assistant",
        content: [{ type: "tool_use", id: "call_1", name: "get-sum", input: { a: 2, b: 3 } }],
      },
      { role: "user", content: [{ type: "tool_result", tool_use_id: "call_1", content: "5" }] },
      {
        role: "assistant",
        content: [
          { type: "text", text: "checking" },
          { type: "tool_use", id: "call_2", name: "delete", input: {} },
        ],
      },
      {
        role: "user",
        content: [{ type: "tool_result", tool_use_id: "call_2", content: "rejected", is_error: true }],
      },
    ]);
  });

  it("reads tool_use blocks as calls", () => {
    const reply = parseMessage({
      content: [
        { type: "text", text: "let me add" },
        { type: "tool_use", id: "toolu_1", name: "get-sum", input: { a: 1, b: 2 } },
      ],
      usage: { input_tokens: 1, output_tokens: 1 },
    });
    expect(reply?.text).toBe("let me add");
    expect(reply?.toolCalls).toEqual([{ id: "toolu_1", name: "get-sum", arguments: { a: 1, b: 2 } }]);
  });
});

describe("Workers AI", () => {
  it("offers tools in the OpenAI-compatible form and reads both tool_calls shapes", async () => {
    let input: Record<string, unknown> = {};
    const prepared = prepareWorkersAi("@cf/model", request, provider("workers-ai"), {});
    await prepared.send({
      fetch: fetch,
      signal: new AbortController().signal,
      deadline: Date.now() + 10_000,
      onAttempt: () => {},
      ai: {
        async run(_model: string, i: unknown) {
          input = i as Record<string, unknown>;
          return { response: "ok" };
        },
      },
    });
    expect(input.tools).toEqual([
      {
        type: "function",
        function: {
          name: "get-sum",
          description: "Adds",
          parameters: { type: "object", properties: { a: { type: "number" } } },
        },
      },
    ]);
    expect(input.messages).toEqual(openAiMessages("sys", conversation));
    expect(parseAiResult({ tool_calls: [{ name: "get-sum", arguments: { a: 1 } }] })?.toolCalls).toEqual([
      { id: "call_0", name: "get-sum", arguments: { a: 1 } },
    ]);
    expect(
      parseAiResult({
        response: null,
        tool_calls: [{ id: "x", type: "function", function: { name: "echo", arguments: '{"m":1}' } }],
      })?.toolCalls,
    ).toEqual([{ id: "x", name: "echo", arguments: { m: 1 } }]);
  });
});
