import {
  type ChatMessage,
  type Completion,
  eventJson,
  type ModelRequest,
  type PrepareCall,
  ProviderError,
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

export const ANTHROPIC_VERSION = "2023-06-01";

export function parseMessage(body: unknown): Completion | null {
  if (typeof body !== "object" || body === null) return null;
  const { content, usage } = body as { content?: unknown; usage?: Record<string, unknown> };
  if (!Array.isArray(content)) return null;
  const text = content
    .filter((b) => typeof b === "object" && b !== null && b.type === "text" && typeof b.text === "string")
    .map((b) => b.text as string)
    .join("");
  const toolCalls: ToolCall[] = [];
  content.forEach((b, i) => {
    if (typeof b !== "object" || b === null || b.type !== "tool_use" || typeof b.name !== "string") return;
    toolCalls.push({
      id: typeof b.id === "string" && b.id !== "" ? b.id : `toolu_${i}`,
      name: b.name,
      ...toolArguments(b.input),
    });
  });
  const input = tokenCount(usage?.input_tokens);
  const output = tokenCount(usage?.output_tokens);
  return {
    text,
    usage: input === null || output === null ? null : { input_tokens: input, output_tokens: output },
    toolCalls,
  };
}

/** What an empty turn is written as: the API refuses empty text content. */
const EMPTY_TURN = "(no text)";

/**
 * The conversation as Messages API turns (tool results are a user turn of `tool_result` blocks).
 * With `nativeTools` false (a request that defines no tools), calls and results become text blocks.
 */
export function anthropicMessages(messages: ChatMessage[], nativeTools = true): unknown[] {
  const turns = messages.map((m) => {
    if (m.role === "tool") {
      return {
        role: "user",
        content: m.results.map((r) =>
          nativeTools
            ? {
                type: "tool_result",
                tool_use_id: r.callId,
                content: r.content,
                ...(r.isError ? { is_error: true } : {}),
              }
            : {
                type: "text",
                text: `[${r.isError ? "error from" : "result of"} tool ${r.name}]\n${r.content || EMPTY_TURN}`,
              },
        ),
      };
    }
    if (m.role === "assistant" && m.toolCalls && m.toolCalls.length > 0) {
      return {
        role: "assistant",
        content: [
          ...(m.content !== "" ? [{ type: "text", text: m.content }] : []),
          ...m.toolCalls.map((c) =>
            nativeTools
              ? { type: "tool_use", id: c.id, name: c.name, input: c.arguments }
              : { type: "text", text: `[called tool ${c.name} with ${JSON.stringify(c.arguments)}]` },
          ),
        ],
      };
    }
    return { role: m.role, content: m.content === "" ? EMPTY_TURN : m.content };
  });
  // Two user turns in a row (tool results, then "answer now") become one turn of blocks.
  const out: Array<{ role: string; content: unknown }> = [];
  const blocks = (c: unknown) => (typeof c === "string" ? [{ type: "text", text: c }] : (c as unknown[]));
  for (const t of turns) {
    const prev = out[out.length - 1];
    if (prev && prev.role === "user" && t.role === "user") {
      prev.content = [...blocks(prev.content), ...blocks(t.content)];
    } else out.push(t);
  }
  return out;
}

function anthropicTools(req: ModelRequest): unknown[] | null {
  if (!req.tools || req.tools.length === 0) return null;
  return req.tools.map((t) => ({
    name: t.name,
    ...(t.description ? { description: t.description } : {}),
    input_schema: t.parameters,
  }));
}

export const prepareAnthropic: PrepareCall = (model, req, provider, env) => {
  const base = resolveBaseUrl(provider, env);
  const key = resolveApiKey(provider, env);
  const tools = anthropicTools(req);
  const body = JSON.stringify({
    model,
    max_tokens: req.maxTokens,
    ...(req.temperature !== undefined ? { temperature: req.temperature } : {}),
    ...(req.system !== null ? { system: req.system } : {}),
    messages: anthropicMessages(req.messages, tools !== null),
    ...(tools ? { tools } : {}),
  });
  const headers: Record<string, string> = {
    "content-type": "application/json",
    "anthropic-version": ANTHROPIC_VERSION,
  };
  if (key !== null) headers["x-api-key"] = key;
  const url = `${base}/v1/messages`;
  return {
    requestBytes: utf8Length(body),
    send: (io) => {
      if (!io.stream)
        return postCompletion(io, { provider, model, url, headers, body }, parseMessage, "a message");
      const streamed = JSON.stringify({ ...JSON.parse(body), stream: true });
      return postStreaming(
        { ...io, stream: io.stream },
        { provider, model, url, headers, body: streamed },
        readMessageEvent,
      );
    },
  };
};

/**
 * One event of Anthropic's Messages stream: `message_start` (input tokens), `content_block_delta`
 * with a `text_delta` (the text), `message_delta` (output tokens), `message_stop`, or `error`.
 */
export const readMessageEvent: StreamReader = (ev, reply) => {
  const data = eventJson(ev);
  const type = ev.event !== "message" ? ev.event : typeof data?.type === "string" ? data.type : "";
  if (type === "error") throw new ProviderError("the stream reported an error");
  if (type === "message_stop") reply.done = true;
  if (!data) return "";
  if (type === "message_start") {
    const usage = (data.message as { usage?: Record<string, unknown> } | undefined)?.usage;
    reply.inputTokens = tokenCount(usage?.input_tokens);
  }
  if (type === "message_delta") {
    const usage = data.usage as Record<string, unknown> | undefined;
    reply.outputTokens = tokenCount(usage?.output_tokens);
  }
  if (type === "content_block_delta") {
    const delta = data.delta as { type?: unknown; text?: unknown } | undefined;
    if (delta?.type === "text_delta" && typeof delta.text === "string") return delta.text;
  }
  return "";
};
