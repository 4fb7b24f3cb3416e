/**
 * Providers of `type: openai`: any OpenAI-compatible Chat Completions API (OpenAI, Azure
 * gateways, Groq, vLLM, Ollama, the test stub). POST `{base_url}/chat/completions`.
 *
 * JSON output uses Structured Outputs (`json_schema`, strict) when the output schema is in the
 * subset strict mode accepts, else JSON mode (`json_object`), which only guarantees an object:
 * the agent step validates the schema either way.
 */
import type { CompiledProvider, JsonSchema } from "../bundle.ts";
import {
  type ChatMessage,
  type Completion,
  eventJson,
  type ModelRequest,
  type PrepareCall,
  postCompletion,
  postStreaming,
  resolveApiKey,
  resolveBaseUrl,
  type StreamReader,
  type ToolCall,
  tokenCount,
  toolArguments,
  utf8Length,
} from "./provider.ts";

/**
 * Models that refuse `max_tokens` and take `max_completion_tokens` (OpenAI's o-series and gpt-5
 * families, also behind Azure, a proxy or a router that prefixes them: `openai/gpt-5`).
 */
const COMPLETION_TOKENS_FAMILY = /^(?:[^/]+\/)?(?:o\d+|gpt-5)(?:$|[-.:])/i;

/** Keywords strict Structured Outputs accepts; anything else falls back to JSON mode. */
const STRICT_KEYWORDS = new Set([
  "$schema",
  "$defs",
  "$ref",
  "type",
  "properties",
  "required",
  "additionalProperties",
  "items",
  "enum",
  "const",
  "anyOf",
  "title",
  "description",
  "pattern",
  "format",
  "minimum",
  "maximum",
  "exclusiveMinimum",
  "exclusiveMaximum",
  "multipleOf",
  "minItems",
  "maxItems",
]);

function strictCompatibleNode(schema: JsonSchema): boolean {
  if (typeof schema !== "object" || Array.isArray(schema)) return false;
  for (const k of Object.keys(schema)) if (!STRICT_KEYWORDS.has(k)) return false;
  const types = Array.isArray(schema.type) ? schema.type : [schema.type];
  if (types.includes("object") || schema.properties !== undefined) {
    const props = schema.properties;
    if (typeof props !== "object" || props === null || Array.isArray(props)) return false;
    if (schema.additionalProperties !== false) return false;
    const required = Array.isArray(schema.required) ? schema.required : [];
    for (const [name, sub] of Object.entries(props)) {
      if (!required.includes(name)) return false;
      if (!strictCompatibleNode(sub as JsonSchema)) return false;
    }
  }
  if (schema.items !== undefined && !strictCompatibleNode(schema.items as JsonSchema)) return false;
  for (const group of [schema.anyOf]) {
    if (group === undefined) continue;
    if (!Array.isArray(group) || !group.every((s) => strictCompatibleNode(s as JsonSchema))) return false;
  }
  const defs = schema.$defs;
  if (defs !== undefined) {
    if (typeof defs !== "object" || defs === null || Array.isArray(defs)) return false;
    if (!Object.values(defs).every((s) => strictCompatibleNode(s as JsonSchema))) return false;
  }
  return true;
}

/** True when OpenAI's strict Structured Outputs can enforce `schema` as given. */
export function isStrictCompatible(schema: JsonSchema): boolean {
  return typeof schema === "object" && schema.type === "object" && strictCompatibleNode(schema);
}

function rootIsObject(schema: JsonSchema | null): boolean {
  if (schema === null || typeof schema !== "object") return true;
  return schema.type === undefined || schema.type === "object";
}

export function responseFormat(req: ModelRequest): Record<string, unknown> | null {
  if (!req.json) return null;
  if (req.jsonSchema !== null && isStrictCompatible(req.jsonSchema)) {
    const { $schema: _dialect, ...schema } = req.jsonSchema as Record<string, unknown>;
    return { type: "json_schema", json_schema: { name: "output", strict: true, schema } };
  }
  // JSON mode forces an object; a schema for another root type is left to the prompt.
  return rootIsObject(req.jsonSchema) ? { type: "json_object" } : null;
}

function messageText(content: unknown): string | null {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    const parts = content
      .map((p) => (typeof p === "object" && p !== null && typeof p.text === "string" ? p.text : ""))
      .join("");
    return parts;
  }
  return null;
}

/** `tool_calls` of an assistant message (Chat Completions form: `{id, type, function: {name, arguments}}`). */
export function parseOpenAiToolCalls(raw: unknown): ToolCall[] {
  if (!Array.isArray(raw)) return [];
  const calls: ToolCall[] = [];
  raw.forEach((c, i) => {
    if (typeof c !== "object" || c === null) return;
    const fn = (c as { function?: { name?: unknown; arguments?: unknown } }).function ?? (c as never);
    const name = (fn as { name?: unknown }).name;
    if (typeof name !== "string") return;
    const id = (c as { id?: unknown }).id;
    calls.push({
      id: typeof id === "string" && id !== "" ? id : `call_${i}`,
      name,
      ...toolArguments((fn as { arguments?: unknown }).arguments),
    });
  });
  return calls;
}

export function parseChatCompletion(body: unknown): Completion | null {
  if (typeof body !== "object" || body === null) return null;
  const { choices, usage } = body as { choices?: unknown; usage?: Record<string, unknown> };
  if (!Array.isArray(choices) || choices.length === 0) return null;
  const message = (choices[0] as { message?: { content?: unknown; tool_calls?: unknown } })?.message;
  const toolCalls = parseOpenAiToolCalls(message?.tool_calls);
  // A reply that only calls tools has `content: null`.
  const text = messageText(message?.content) ?? (toolCalls.length > 0 ? "" : null);
  if (text === null) return null;
  const input = tokenCount(usage?.prompt_tokens);
  const output = tokenCount(usage?.completion_tokens);
  return {
    text,
    usage: input === null || output === null ? null : { input_tokens: input, output_tokens: output },
    toolCalls,
  };
}

/** The conversation as Chat Completions messages (each tool result is its own `tool` message). */
export function openAiMessages(system: string | null, messages: ChatMessage[]): unknown[] {
  const out: unknown[] = system !== null ? [{ role: "system", content: system }] : [];
  for (const m of messages) {
    if (m.role === "tool") {
      for (const r of m.results) {
        // Chat Completions has no error flag on a tool message: the text says it.
        out.push({
          role: "tool",
          tool_call_id: r.callId,
          content: r.isError ? `ERROR: ${r.content}` : r.content,
        });
      }
    } else if (m.role === "assistant" && m.toolCalls && m.toolCalls.length > 0) {
      out.push({
        role: "assistant",
        content: m.content === "" ? null : m.content,
        tool_calls: m.toolCalls.map((c) => ({
          id: c.id,
          type: "function",
          function: { name: c.name, arguments: JSON.stringify(c.arguments) },
        })),
      });
    } else {
      out.push({ role: m.role, content: m.content });
    }
  }
  return out;
}

export function openAiTools(req: ModelRequest): unknown[] | null {
  if (!req.tools || req.tools.length === 0) return null;
  return req.tools.map((t) => ({
    type: "function",
    function: {
      name: t.name,
      ...(t.description ? { description: t.description } : {}),
      parameters: t.parameters,
    },
  }));
}

/**
 * The request field that carries the output token limit. OpenAI's own API calls it
 * `max_completion_tokens` (and its o-series and gpt-5 models refuse `max_tokens`); many other
 * OpenAI-compatible servers (vLLM, Ollama, llama.cpp, older gateways) know only `max_tokens`. The
 * provider entry decides with `config.max_tokens_field`; without it, `max_completion_tokens` goes
 * to OpenAI's own host and to models of those families anywhere, `max_tokens` everywhere else.
 */
export function maxTokensField(
  provider: CompiledProvider,
  baseUrl: string,
  model: string,
): "max_tokens" | "max_completion_tokens" {
  if (provider.maxTokensField) return provider.maxTokensField;
  if (COMPLETION_TOKENS_FAMILY.test(model) || hostOf(baseUrl) === "api.openai.com") {
    return "max_completion_tokens";
  }
  return "max_tokens";
}

function hostOf(url: string): string | null {
  try {
    return new URL(url).hostname.toLowerCase();
  } catch {
    return null;
  }
}

export const prepareOpenAi: PrepareCall = (model, req, provider: CompiledProvider, env) => {
  const base = resolveBaseUrl(provider, env);
  const key = resolveApiKey(provider, env);
  const messages = openAiMessages(req.system, req.messages);
  const format = responseFormat(req);
  const tools = openAiTools(req);
  const body = JSON.stringify({
    model,
    messages,
    [maxTokensField(provider, base, model)]: req.maxTokens,
    ...(req.temperature !== undefined ? { temperature: req.temperature } : {}),
    ...(tools ? { tools } : {}),
    ...(format ? { response_format: format } : {}),
  });
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (key !== null) headers.authorization = `Bearer ${key}`;
  const url = `${base}/chat/completions`;
  return {
    requestBytes: utf8Length(body),
    send: (io) => {
      if (!io.stream)
        return postCompletion(
          io,
          { provider, model, url, headers, body },
          parseChatCompletion,
          "a chat completion",
        );
      // Streaming: `chat.completion.chunk` events ending `[DONE]`, usage in a last chunk.
      const streamed = JSON.stringify({
        ...JSON.parse(body),
        stream: true,
        stream_options: { include_usage: true },
      });
      return postStreaming(
        { ...io, stream: io.stream },
        { provider, model, url, headers, body: streamed },
        readChunk,
      );
    },
  };
};

/** One `chat.completion.chunk` of an OpenAI-compatible stream. */
export const readChunk: StreamReader = (ev, reply) => {
  if (ev.data.trim() === "[DONE]") {
    reply.done = true;
    return "";
  }
  const data = eventJson(ev);
  if (!data) return "";
  const usage = data.usage as Record<string, unknown> | null | undefined;
  if (usage) {
    reply.inputTokens = tokenCount(usage.prompt_tokens);
    reply.outputTokens = tokenCount(usage.completion_tokens);
  }
  const choice = (Array.isArray(data.choices) ? data.choices[0] : null) as {
    delta?: { content?: unknown };
  } | null;
  const content = choice?.delta?.content;
  return typeof content === "string" ? content : "";
};
