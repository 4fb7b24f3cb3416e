/**
 * A model provider stand-in for the workers tests: a real HTTP server on 127.0.0.1 that speaks
 * OpenAI Chat Completions (`/v1/chat/completions`, `/chat/completions`) and Anthropic Messages
 * (`/v1/messages`), so the gateway is exercised over the wire exactly as in production.
 *
 * Behaviour is chosen per request by the model id (text before an optional `:suffix`, so a
 * test can make several distinct models with the same behaviour, e.g. `stub-echo:a`):
 * - `stub-json`: a JSON reply: the text after `REPLY=` in the prompt (to the end of its line;
 *   also found inside a JSON-encoded prompt), else an instance of the requested schema
 *   (OpenAI `response_format`, or the schema after "JSON Schema:" in the system prompt),
 *   else `{"ok":true}`.
 * - `stub-bad-json`: invalid JSON (the text after `BAD=` in the prompt, to the end of its line, when
 *   it has one), unless the conversation already holds an assistant turn (a repair call): then as
 *   `stub-json`.
 * - `stub-always-bad`: never JSON.
 * - `stub-echo`: the last user message, verbatim.
 * - `stub-echo-key`: the API key it was sent, as the reply's text (a provider that quotes it back).
 * - `stub-500`, `stub-401`: that status, with an error body that quotes the API key (as some
 *   providers do) so tests can check it never leaks.
 * - `stub-500-then-ok`, `stub-429-then-ok`: the first request for (key, model) fails, the next
 *   ones behave as `stub-json`.
 * - `stub-slow:<ms>`: waits (default 1000 ms), then as `stub-json`.
 * - `stub-no-usage`: as `stub-json` without `usage`.
 * - OpenAI's o-series and gpt-5 ids (`o3-mini`, `gpt-5-mini`): as `stub-json`, but a request with
 *   `max_tokens` gets OpenAI's 400 `unsupported_parameter`; `stub-max-tokens-only`: as `stub-json`,
 *   but a request with `max_completion_tokens` gets a 400 (a server that knows only `max_tokens`).
 * - `stub-tools`: a scripted tool-calling model (see `toolsReply`): the first user message holds
 *   `SCRIPT=<JSON array>`, one element per model call: a list of calls `[{name, arguments}]`
 *   (only made while the request offers tools, unless the element is `{calls, force: true}`),
 *   `{reply: <value>}` (the final answer), `""` (an empty reply) or `"$results"` (the final
 *   answer `{"results": [...]}`, every tool result it was sent, `ERROR: ` before failed ones);
 *   past the end of the script, `"$results"`. A user message with `REFLECT=<text>` (a reflect
 *   call) is answered with that text. Calls come back in the provider's native form.
 * - `stub-broken-stream`: asked to stream, sends two chunks, then cuts the connection.
 * Every reply reports usage 1000 input / 500 output tokens (STUB_USAGE).
 *
 * A request with `stream: true` (and no tool call in the reply) is answered as each API streams,
 * in 4-character chunks 10 ms apart (`CHUNK_MS=<n>` in the prompt sets the gap): OpenAI's
 * `chat.completion.chunk` objects as `data:` lines ending `data: [DONE]`, usage in a last chunk when
 * `stream_options.include_usage` asks for it; Anthropic's `message_start`, `content_block_delta`
 * (`text_delta`), `message_delta` (usage) and `message_stop` events.
 *
 * Anthropic requests the real API refuses (tool blocks without `tools`, empty text) get its 400.
 * Every request is recorded with its headers and body. `GET /__log?key=K` returns those sent
 * with API key K (Bearer token or x-api-key), oldest first; tests use a fresh key each to stay
 * independent. `DELETE /__log?key=K` forgets them.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export const STUB_USAGE = { input_tokens: 1000, output_tokens: 500 } as const;

export interface StubRequestLog {
  path: string;
  /** Header names lower-cased. */
  headers: Record<string, string>;
  body: unknown;
  key: string | null;
}

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

function keyOf(req: IncomingMessage): string | null {
  const auth = req.headers.authorization;
  if (typeof auth === "string" && /^bearer /i.test(auth)) return auth.slice(7);
  const k = req.headers["x-api-key"];
  return typeof k === "string" ? k : null;
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(JSON.stringify(body));
}

/** A minimal instance of a JSON Schema (the common keywords only). */
export function exampleFor(schema: unknown): Json {
  if (typeof schema !== "object" || schema === null) return null;
  const s = schema as Record<string, unknown>;
  if (Array.isArray(s.enum) && s.enum.length > 0) return s.enum[0] as Json;
  if ("const" in s) return s.const as Json;
  for (const k of ["anyOf", "oneOf"]) {
    const alts = s[k];
    if (Array.isArray(alts) && alts.length > 0) return exampleFor(alts[0]);
  }
  const type = Array.isArray(s.type) ? s.type.find((t) => t !== "null") : s.type;
  switch (type) {
    case "string": {
      const min = typeof s.minLength === "number" ? s.minLength : 0;
      return "example".padEnd(min, "x");
    }
    case "integer":
    case "number":
      return typeof s.minimum === "number" ? s.minimum : 1;
    case "boolean":
      return true;
    case "null":
      return null;
    case "array": {
      const n = typeof s.minItems === "number" ? s.minItems : 0;
      return Array.from({ length: n }, () => exampleFor(s.items));
    }
    default: {
      const out: { [k: string]: Json } = {};
      const props = (s.properties ?? {}) as Record<string, unknown>;
      for (const [name, sub] of Object.entries(props)) out[name] = exampleFor(sub);
      return out;
    }
  }
}

/**
 * Every string in a message: the strings inside it when it is JSON (decoded, so a marker in a
 * JSON-encoded prompt reads as written), then the text itself.
 */
function stringsOf(text: string): string[] {
  const out: string[] = [];
  try {
    const walk = (v: unknown) => {
      if (typeof v === "string") out.push(v);
      else if (Array.isArray(v)) v.forEach(walk);
      else if (typeof v === "object" && v !== null) Object.values(v).forEach(walk);
    };
    walk(JSON.parse(text));
  } catch {
    // Plain text prompt.
  }
  out.push(text);
  return out;
}

interface Conversation {
  system: string;
  messages: Array<{ role: string; content: string }>;
  schema: unknown;
}

function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.map((b) => (typeof b?.text === "string" ? b.text : "")).join("");
  return "";
}

/** The text after `BAD=` in a user message (to the end of its line), or null. */
function badReply(conv: Conversation): string | null {
  for (const m of conv.messages) {
    if (m.role !== "user") continue;
    for (const s of stringsOf(m.content)) {
      const at = s.indexOf("BAD=");
      if (at !== -1) return (s.slice(at + 4).split("\n")[0] ?? "").trim();
    }
  }
  return null;
}

function jsonReply(conv: Conversation): string {
  for (const m of conv.messages) {
    if (m.role !== "user") continue;
    for (const s of stringsOf(m.content)) {
      const at = s.indexOf("REPLY=");
      if (at !== -1) return (s.slice(at + 6).split("\n")[0] ?? "").trim();
    }
  }
  if (conv.schema !== undefined) return JSON.stringify(exampleFor(conv.schema));
  const marker = conv.system.indexOf("JSON Schema:");
  if (marker !== -1) {
    try {
      return JSON.stringify(exampleFor(JSON.parse(conv.system.slice(marker + 12).trim())));
    } catch {
      // Not a schema after all.
    }
  }
  return JSON.stringify({ ok: true });
}

/**
 * What the real Messages API refuses with 400 and this stub refuses too: `tool_use` / `tool_result`
 * blocks in a request that defines no tools, and empty text content.
 */
/**
 * What OpenAI-compatible servers refuse about the output token limit: OpenAI's o-series and
 * gpt-5 models refuse `max_tokens` (its 400 `unsupported_parameter`), and `stub-max-tokens-only`
 * stands for a server that knows only `max_tokens` and refuses `max_completion_tokens`.
 */
function openAiRefusal(body: Record<string, unknown>): Record<string, unknown> | null {
  const model = typeof body.model === "string" ? body.model : "";
  if (/^(?:o\d+|gpt-5)(?:$|[-.:])/.test(model) && "max_tokens" in body) {
    return {
      message:
        "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
      type: "invalid_request_error",
      param: "max_tokens",
      code: "unsupported_parameter",
    };
  }
  if (model.split(":")[0] === "stub-max-tokens-only" && "max_completion_tokens" in body) {
    return {
      message: "Unrecognized request argument supplied: max_completion_tokens",
      type: "invalid_request_error",
      code: "unrecognized_argument",
    };
  }
  return null;
}

function anthropicRefusal(body: Record<string, unknown>): string | null {
  const hasTools = Array.isArray(body.tools) && body.tools.length > 0;
  for (const m of (Array.isArray(body.messages) ? body.messages : []) as Array<Record<string, unknown>>) {
    const blocks = typeof m.content === "string" ? [{ type: "text", text: m.content }] : m.content;
    if (!Array.isArray(blocks) || blocks.length === 0) return "messages: content must be non-empty";
    for (const b of blocks as Array<Record<string, unknown>>) {
      if (b.type === "text" && b.text === "") return "messages: text content blocks must be non-empty";
      if ((b.type === "tool_use" || b.type === "tool_result") && !hasTools) {
        return "Requests which include `tool_use` or `tool_result` blocks must define tools.";
      }
    }
  }
  return null;
}

type Outcome = { status: number; text?: string; usage?: boolean; delayMs?: number; retryAfter?: string };

type ScriptStep =
  | Array<{ name: string; arguments?: unknown }>
  | { calls: Array<{ name: string; arguments?: unknown }>; force?: boolean }
  | { reply: unknown }
  | string;

/** The tool results sent so far, in order, from either provider's native form. */
function toolResults(body: Record<string, unknown>): string[] {
  const out: string[] = [];
  for (const m of (Array.isArray(body.messages) ? body.messages : []) as Array<Record<string, unknown>>) {
    if (m.role === "tool") out.push(textOf(m.content));
    if (m.role === "user" && Array.isArray(m.content)) {
      for (const b of m.content as Array<Record<string, unknown>>) {
        if (b.type === "tool_result") out.push(`${b.is_error ? "ERROR: " : ""}${textOf(b.content)}`);
      }
    }
  }
  return out;
}

/** The scripted reply of `stub-tools`: text, or tool calls. */
function toolsReply(
  body: Record<string, unknown>,
  conv: Conversation,
): { text: string; calls: Array<{ name: string; arguments: unknown }> } {
  const users = conv.messages.filter((m) => m.role === "user");
  const lastUser = users.at(-1)?.content ?? "";
  const reflect = lastUser.indexOf("REFLECT=");
  if (reflect !== -1) return { text: (lastUser.slice(reflect + 8).split("\n")[0] ?? "").trim(), calls: [] };
  let script: ScriptStep[] = [];
  for (const u of users) {
    const at = u.content.indexOf("SCRIPT=");
    if (at === -1) continue;
    try {
      script = JSON.parse((u.content.slice(at + 7).split("\n")[0] ?? "").trim()) as ScriptStep[];
    } catch {
      script = [];
    }
    break;
  }
  const messages = (Array.isArray(body.messages) ? body.messages : []) as Array<Record<string, unknown>>;
  const turn = messages.filter((m) => m.role === "assistant").length;
  const offered = Array.isArray(body.tools) && body.tools.length > 0;
  const results = () => JSON.stringify({ results: toolResults(body) });
  const step = script[turn] ?? "$results";
  if (step === "$results") return { text: results(), calls: [] };
  if (typeof step === "string") return { text: step, calls: [] };
  if (!Array.isArray(step) && "reply" in step) {
    return { text: typeof step.reply === "string" ? step.reply : JSON.stringify(step.reply), calls: [] };
  }
  const calls = Array.isArray(step) ? step : step.calls;
  const force = !Array.isArray(step) && step.force === true;
  if (!offered && !force) return { text: results(), calls: [] };
  return { text: "", calls: calls.map((c) => ({ name: c.name, arguments: c.arguments ?? {} })) };
}

function decide(model: string, conv: Conversation, seen: number, key: string | null): Outcome {
  const [behaviour, arg] = model.split(":");
  const keyEcho = { error: { message: `Incorrect API key provided: ${key}`, type: "invalid_request_error" } };
  switch (behaviour) {
    case "stub-bad-json":
      return conv.messages.some((m) => m.role === "assistant")
        ? { status: 200, text: jsonReply(conv) }
        : { status: 200, text: badReply(conv) ?? 'Sure! Here it is: {"oops": ' };
    case "stub-always-bad":
      return { status: 200, text: "I would rather not answer in JSON." };
    case "stub-echo":
      return { status: 200, text: conv.messages.filter((m) => m.role === "user").at(-1)?.content ?? "" };
    case "stub-echo-key":
      return { status: 200, text: `the key you sent is ${key}` };
    case "stub-500":
      return { status: 500, text: JSON.stringify(keyEcho) };
    case "stub-401":
      return {
        status: 401,
        text: JSON.stringify({ error: { ...keyEcho.error, code: "invalid_api_key" } }),
      };
    case "stub-500-then-ok":
      return seen === 0
        ? { status: 500, text: JSON.stringify(keyEcho) }
        : { status: 200, text: jsonReply(conv) };
    case "stub-429-then-ok":
      return seen === 0
        ? { status: 429, text: JSON.stringify({ error: { type: "rate_limit" } }), retryAfter: "0" }
        : { status: 200, text: jsonReply(conv) };
    case "stub-slow":
      return { status: 200, text: jsonReply(conv), delayMs: Number(arg ?? 1000) || 1000 };
    case "stub-no-usage":
      return { status: 200, text: jsonReply(conv), usage: false };
    default:
      return { status: 200, text: jsonReply(conv) };
  }
}

export async function startModelStub(): Promise<{ port: number; close(): Promise<void> }> {
  const log: StubRequestLog[] = [];
  const counts = new Map<string, number>();

  const server = createServer(async (req, res) => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    const key = url.searchParams.get("key");
    if (url.pathname === "/__log") {
      const mine = (e: StubRequestLog) => key === null || e.key === key;
      if (req.method === "DELETE") {
        for (let i = log.length - 1; i >= 0; i--) if (mine(log[i] as StubRequestLog)) log.splice(i, 1);
        res.writeHead(204).end();
        return;
      }
      send(res, 200, log.filter(mine));
      return;
    }

    const raw = await readBody(req);
    let body: Record<string, unknown> = {};
    try {
      body = JSON.parse(raw);
    } catch {
      send(res, 400, { error: { type: "invalid_request_error", message: "body is not JSON" } });
      return;
    }
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers)) if (typeof v === "string") headers[k] = v;
    const apiKey = keyOf(req);
    log.push({ path: url.pathname, headers, body, key: apiKey });

    const isOpenAi = url.pathname === "/v1/chat/completions" || url.pathname === "/chat/completions";
    const isAnthropic = url.pathname === "/v1/messages";
    if (req.method !== "POST" || (!isOpenAi && !isAnthropic)) {
      send(res, 404, { error: { type: "not_found" } });
      return;
    }
    if (!apiKey) {
      send(res, 401, { error: { type: "authentication_error", message: "no API key" } });
      return;
    }
    if (isAnthropic && req.headers["anthropic-version"] === undefined) {
      send(res, 400, { error: { type: "invalid_request_error", message: "anthropic-version is required" } });
      return;
    }
    const refusal = isAnthropic ? anthropicRefusal(body) : null;
    if (refusal) {
      send(res, 400, { type: "error", error: { type: "invalid_request_error", message: refusal } });
      return;
    }
    const openAiError = isOpenAi ? openAiRefusal(body) : null;
    if (openAiError) {
      send(res, 400, { error: openAiError });
      return;
    }

    const rawMessages = Array.isArray(body.messages) ? (body.messages as Array<Record<string, unknown>>) : [];
    const messages = rawMessages.map((m) => ({ role: String(m.role), content: textOf(m.content) }));
    const format = body.response_format as { json_schema?: { schema?: unknown } } | undefined;
    const conv: Conversation = {
      system: isAnthropic
        ? textOf(body.system)
        : messages
            .filter((m) => m.role === "system")
            .map((m) => m.content)
            .join("\n"),
      messages: messages.filter((m) => m.role !== "system"),
      schema: format?.json_schema?.schema,
    };
    const model = typeof body.model === "string" ? body.model : "";
    const countKey = `${apiKey}\u0000${model}`;
    const seen = counts.get(countKey) ?? 0;
    counts.set(countKey, seen + 1);
    const outcome = decide(model, conv, seen, apiKey);
    if (outcome.delayMs) await new Promise((r) => setTimeout(r, outcome.delayMs));
    if (res.destroyed) return;

    if (outcome.status !== 200) {
      res.writeHead(outcome.status, {
        "content-type": "application/json",
        ...(outcome.retryAfter !== undefined ? { "retry-after": outcome.retryAfter } : {}),
      });
      res.end(outcome.text ?? "{}");
      return;
    }
    let text = outcome.text ?? "";
    let calls: Array<{ name: string; arguments: unknown }> = [];
    if (model.split(":")[0] === "stub-tools") ({ text, calls } = toolsReply(body, conv));
    const withUsage = outcome.usage !== false;
    const usage = withUsage
      ? {
          usage: {
            prompt_tokens: STUB_USAGE.input_tokens,
            completion_tokens: STUB_USAGE.output_tokens,
            total_tokens: STUB_USAGE.input_tokens + STUB_USAGE.output_tokens,
          },
        }
      : {};
    if (body.stream === true && calls.length === 0) {
      await streamReply(res, {
        anthropic: isAnthropic,
        text,
        usage: withUsage,
        model,
        broken: model.split(":")[0] === "stub-broken-stream",
      });
      return;
    }
    if (calls.length > 0 && isOpenAi) {
      send(res, 200, {
        id: `chatcmpl-${log.length}`,
        object: "chat.completion",
        model,
        choices: [
          {
            index: 0,
            message: {
              role: "assistant",
              content: null,
              tool_calls: calls.map((c, i) => ({
                id: `call_${log.length}_${i}`,
                type: "function",
                function: { name: c.name, arguments: JSON.stringify(c.arguments) },
              })),
            },
            finish_reason: "tool_calls",
          },
        ],
        ...usage,
      });
      return;
    }
    if (calls.length > 0) {
      send(res, 200, {
        id: `msg_${log.length}`,
        type: "message",
        role: "assistant",
        model,
        content: calls.map((c, i) => ({
          type: "tool_use",
          id: `toolu_${log.length}_${i}`,
          name: c.name,
          input: c.arguments,
        })),
        stop_reason: "tool_use",
        ...(withUsage ? { usage: { ...STUB_USAGE } } : {}),
      });
      return;
    }
    if (isOpenAi) {
      send(res, 200, {
        id: `chatcmpl-${log.length}`,
        object: "chat.completion",
        created: Math.floor(Date.now() / 1000),
        model,
        choices: [{ index: 0, message: { role: "assistant", content: text }, finish_reason: "stop" }],
        ...(withUsage
          ? {
              usage: {
                prompt_tokens: STUB_USAGE.input_tokens,
                completion_tokens: STUB_USAGE.output_tokens,
                total_tokens: STUB_USAGE.input_tokens + STUB_USAGE.output_tokens,
              },
            }
          : {}),
      });
    } else {
      send(res, 200, {
        id: `msg_${log.length}`,
        type: "message",
        role: "assistant",
        model,
        content: [{ type: "text", text }],
        stop_reason: "end_turn",
        ...(withUsage ? { usage: { ...STUB_USAGE } } : {}),
      });
    }
  });

  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    port,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((e) => (e ? reject(e) : resolve()));
      }),
  };
}

/** The reply as the provider streams it (see the header), chunk by chunk. */
async function streamReply(
  res: ServerResponse,
  o: { anthropic: boolean; text: string; usage: boolean; model: string; broken: boolean },
): Promise<void> {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  const gap = Number(/CHUNK_MS=(\d+)/.exec(o.text)?.[1] ?? 10);
  const chunks: string[] = [];
  for (let i = 0; i < o.text.length; i += 4) chunks.push(o.text.slice(i, i + 4));
  const write = (event: string | null, data: unknown) =>
    res.write(
      `${event ? `event: ${event}\n` : ""}data: ${typeof data === "string" ? data : JSON.stringify(data)}\n\n`,
    );
  const sleep = () => new Promise((r) => setTimeout(r, gap));
  const id = `stream-${Date.now()}`;
  if (o.anthropic) {
    write("message_start", {
      type: "message_start",
      message: {
        id,
        type: "message",
        role: "assistant",
        model: o.model,
        content: [],
        usage: { input_tokens: STUB_USAGE.input_tokens, output_tokens: 1 },
      },
    });
    write("content_block_start", {
      type: "content_block_start",
      index: 0,
      content_block: { type: "text", text: "" },
    });
  } else {
    write(null, {
      id,
      object: "chat.completion.chunk",
      model: o.model,
      choices: [{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: null }],
    });
  }
  for (const [n, chunk] of chunks.entries()) {
    await sleep();
    if (res.destroyed) return;
    if (o.broken && n === 2) {
      res.destroy();
      return;
    }
    if (o.anthropic)
      write("content_block_delta", {
        type: "content_block_delta",
        index: 0,
        delta: { type: "text_delta", text: chunk },
      });
    else
      write(null, {
        id,
        object: "chat.completion.chunk",
        model: o.model,
        choices: [{ index: 0, delta: { content: chunk }, finish_reason: null }],
      });
  }
  if (o.anthropic) {
    write("content_block_stop", { type: "content_block_stop", index: 0 });
    write("message_delta", {
      type: "message_delta",
      delta: { stop_reason: "end_turn" },
      usage: { output_tokens: STUB_USAGE.output_tokens },
    });
    write("message_stop", { type: "message_stop" });
  } else {
    write(null, {
      id,
      object: "chat.completion.chunk",
      model: o.model,
      choices: [{ index: 0, delta: {}, finish_reason: "stop" }],
    });
    if (o.usage)
      write(null, {
        id,
        object: "chat.completion.chunk",
        model: o.model,
        choices: [],
        usage: {
          prompt_tokens: STUB_USAGE.input_tokens,
          completion_tokens: STUB_USAGE.output_tokens,
          total_tokens: STUB_USAGE.input_tokens + STUB_USAGE.output_tokens,
        },
      });
    write(null, "[DONE]");
  }
  res.end();
}
