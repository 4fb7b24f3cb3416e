import {
  type Completion,
  type PrepareCall,
  postCompletion,
  resolveApiKey,
  resolveBaseUrl,
  tokenCount,
  utf8Length,
} from "./provider.ts";

export const ANTHROPIC_DEFAULT_BASE_URL = "https://api.anthropic.com";
export const ANTHROPIC_VERSION = "2023-06-01";

export function parseMessage(body: unknown): Completion | null {
  if (typeof body !== "object" || body === null) return null;
  const { content, usage } = body as { content?: unknown; usage?: Record<string, unknown> };
  if (!Array.isArray(content)) return null;
  const text = content
    .filter((b) => typeof b === "object" && b !== null && b.type === "text" && typeof b.text === "string")
    .map((b) => b.text as string)
    .join("");
  const input = tokenCount(usage?.input_tokens);
  const output = tokenCount(usage?.output_tokens);
  return {
    text,
    usage: input === null || output === null ? null : { input_tokens: input, output_tokens: output },
  };
}

export const prepareAnthropic: PrepareCall = (model, req, provider, env) => {
  const base = resolveBaseUrl(provider, ANTHROPIC_DEFAULT_BASE_URL, env);
  const key = resolveApiKey(provider, env);
  const body = JSON.stringify({
    model,
    max_tokens: req.maxTokens,
    ...(req.system !== null ? { system: req.system } : {}),
    messages: req.messages,
  });
  const headers: Record<string, string> = {
    "content-type": "application/json",
    "anthropic-version": ANTHROPIC_VERSION,
  };
  if (key !== null) headers["x-api-key"] = key;
  return {
    requestBytes: utf8Length(body),
    send: (io) =>
      postCompletion(
        io,
        { provider, model, url: `${base}/v1/messages`, headers, body },
        parseMessage,
        "a message",
      ),
  };
};
