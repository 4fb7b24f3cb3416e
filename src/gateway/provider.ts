/**
 * The one interface every model provider implements, so that adding a provider type means
 * adding one module next to openai.ts and one line in `PROVIDERS` (complete.ts), beside its
 * line in PROVIDER_TYPES (src/bundle.ts).
 *
 * A provider first *prepares* a call (builds the exact request, checks its key and base URL)
 * without sending anything: the gateway needs the serialised request's size to reserve the
 * call's worst-case cost before it is made, and a configuration error must cost nothing.
 */

import { type CompiledProvider, type JsonObject, type JsonSchema, PROVIDER_TYPES } from "../bundle.ts";
import { MAX_JSON_DEPTH, nestsDeeperThan } from "../common/json-depth.ts";
import { readSse, type SseEvent } from "../common/sse.ts";
import type { Clock } from "../engine/clock.ts";
import { jsonErrorMessage } from "../engine/mask.ts";
import { shownUrl } from "../engine/net.ts";
import { networkFailure, retryHttp } from "../engine/retry.ts";
import { type OutputStream, StepError } from "../engine/types.ts";

/**
 * A provider-neutral conversation. Each adapter writes it in its own native form: OpenAI
 * `tool_calls` and role `tool` messages, Anthropic `tool_use` and `tool_result` blocks.
 */
export type ChatMessage =
  | { role: "user"; content: string }
  | { role: "assistant"; content: string; toolCalls?: ToolCall[] }
  | { role: "tool"; results: ToolResultMessage[] };

/** A tool the model may call, under the name it is offered by. */
export interface ToolSpec {
  name: string;
  description: string | null;
  /** JSON Schema of the arguments (an object schema). */
  parameters: JsonObject;
}

export interface ToolCall {
  /** The provider's id of the call (echoed back with its result). */
  id: string;
  name: string;
  arguments: JsonObject;
  /** Set when the model's arguments were not a JSON object (they are `{}` then). */
  invalidArguments?: string;
}

export interface ToolResultMessage {
  callId: string;
  name: string;
  content: string;
  isError: boolean;
}

/** Provider-neutral request for one completion. */
export interface ModelRequest {
  system: string | null;
  messages: ChatMessage[];
  maxTokens: number;
  /** Sampling temperature (the group's `default_temperature`); absent: not sent. */
  temperature?: number;
  /** Ask for JSON output (provider JSON mode where there is one). */
  json: boolean;
  /** The schema the JSON must satisfy, when known (OpenAI structured outputs use it). */
  jsonSchema: JsonSchema | null;
  /** Tools offered on this call; absent or empty: none (the model must answer). */
  tools?: ToolSpec[];
}

export interface Usage {
  input_tokens: number;
  output_tokens: number;
}

export interface Completion {
  text: string;
  /** null when the provider reported no usage (the gateway then charges the worst case). */
  usage: Usage | null;
  /** Tool calls of the reply ([] for a final answer). */
  toolCalls: ToolCall[];
}

/** Parses tool-call arguments given as a JSON string (OpenAI) or an object (Anthropic, Workers AI). */
export function toolArguments(raw: unknown): { arguments: JsonObject; invalidArguments?: string } {
  let value = raw;
  if (typeof raw === "string") {
    if (raw.trim() === "") return { arguments: {} };
    if (nestsDeeperThan(raw))
      return { arguments: {}, invalidArguments: `nested deeper than ${MAX_JSON_DEPTH} levels` };
    try {
      value = JSON.parse(raw);
    } catch (e) {
      return { arguments: {}, invalidArguments: `not JSON (${jsonErrorMessage(e)})` };
    }
  }
  if (value === undefined || value === null) return { arguments: {} };
  if (typeof value !== "object" || Array.isArray(value)) {
    return { arguments: {}, invalidArguments: "not a JSON object" };
  }
  return { arguments: value as JsonObject };
}

/** What a prepared call needs from the run to go out. */
export interface ProviderIo {
  fetch: (input: string | Request, init?: RequestInit) => Promise<Response>;
  signal: AbortSignal;
  deadline: number;
  ai?: { run(model: string, input: unknown, options?: unknown): Promise<unknown> };
  /** Called once per HTTP attempt (retries included), for metrics.attempts. */
  onAttempt: () => void;
  /** Default the system clock. */
  clock?: Clock;
  /** Set when the call streams (docs/agents-and-tools.md, "Streaming"): where its text goes as it arrives. */
  stream?: TextSink;
}

/**
 * Where a streaming call's text goes as it arrives (the step's OutputStream): `reset`, what came
 * so far is void (the model failed mid-way); `end`, the answer is whole.
 */
export type TextSink = OutputStream;

/** What a provider's stream reader builds from its events. */
export interface StreamedReply {
  text: string;
  inputTokens: number | null;
  outputTokens: number | null;
  /** The provider said the reply is complete. */
  done: boolean;
}

/** One event of a provider's stream: the text it adds ("" for none), read into `reply`. */
export type StreamReader = (ev: SseEvent, reply: StreamedReply) => string;

/** One streamed event may be this large at most (a chunk is a few words). */
const MAX_STREAM_EVENT_BYTES = 1024 * 1024;

export interface PreparedCall {
  /** UTF-8 byte length of the serialised request: the budget rule's worst-case input-token count. */
  requestBytes: number;
  send(io: ProviderIo): Promise<Completion>;
}

export type PrepareCall = (
  model: string,
  req: ModelRequest,
  provider: CompiledProvider,
  env: Record<string, string | undefined>,
) => PreparedCall;

/**
 * A failure of one model (configuration, network, non-2xx after retries, unreadable reply).
 * The gateway then tries the group's next model. Messages never quote a provider's response
 * body, which could echo the API key back.
 */
export class ProviderError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ProviderError";
  }
}

/** Every provider call: 3 attempts, 429/5xx/network retried (docs/agents-and-tools.md). */
export const PROVIDER_ATTEMPTS = 3;
/** Per attempt; always further limited by the run deadline. */
export const PROVIDER_ATTEMPT_TIMEOUT_MS = 60_000;

export function utf8Length(text: string): number {
  return new TextEncoder().encode(text).byteLength;
}

/**
 * A provider's `base_url` may be `env:NAME` (read from the Worker's environment, so local
 * setups and tests can point at a port); without one, its type's default. Returned without
 * trailing slash.
 */
export function resolveBaseUrl(provider: CompiledProvider, env: Record<string, string | undefined>): string {
  const raw = provider.baseUrl ?? PROVIDER_TYPES[provider.type].defaultBaseUrl ?? "";
  if (raw.startsWith("env:")) {
    const name = raw.slice(4);
    const value = env[name];
    if (!value) throw new ProviderError(`provider ${provider.name}: base URL env ${name} is not set`);
    return value.replace(/\/+$/, "");
  }
  return raw.replace(/\/+$/, "");
}

/** The API key, or a ProviderError naming the env var (never its value). null: no key configured. */
export function resolveApiKey(
  provider: CompiledProvider,
  env: Record<string, string | undefined>,
): string | null {
  if (provider.apiKeyEnv === null) return null;
  const key = env[provider.apiKeyEnv];
  if (!key)
    throw new ProviderError(`provider ${provider.name}: API key env ${provider.apiKeyEnv} is not set`);
  return key;
}

/**
 * The provider's machine-readable error code (`invalid_api_key`, `overloaded_error`), safe to
 * show because it is an identifier, not free text that could quote the request.
 */
export function errorCodeOf(body: unknown): string | null {
  if (typeof body !== "object" || body === null) return null;
  const err = (body as { error?: unknown }).error;
  if (typeof err !== "object" || err === null) return null;
  const { code, type } = err as { code?: unknown; type?: unknown };
  for (const c of [code, type]) {
    if (typeof c === "string" && /^[A-Za-z0-9_.-]{1,64}$/.test(c)) return c;
  }
  return null;
}

/** Reads a non-2xx response into a safe one-line reason. */
export async function httpFailure(
  provider: CompiledProvider,
  model: string,
  res: Response,
): Promise<ProviderError> {
  let code: string | null = null;
  try {
    code = errorCodeOf(JSON.parse(await res.text()));
  } catch {
    // Not JSON: nothing safe to quote.
  }
  return new ProviderError(`${provider.name}/${model}: HTTP ${res.status}${code ? ` (${code})` : ""}`);
}

/** Where and what one model call POSTs. */
export interface ProviderTarget {
  provider: CompiledProvider;
  model: string;
  url: string;
  headers: Record<string, string>;
  body: string;
}

/**
 * One POST to a provider with the shared retry policy; a non-2xx after them is a ProviderError, and
 * so is a provider that could not be reached, said plainly with the URL it was sent to (its
 * origin and path; a base URL kept in a secret is masked to its origin like any secret URL).
 */
async function postWithRetries(io: ProviderIo, target: ProviderTarget): Promise<Response> {
  const { provider, model, url, headers, body } = target;
  let attempts = 0;
  let res: Response;
  try {
    res = await retryHttp((signal) => io.fetch(url, { method: "POST", headers, body, signal }), {
      attempts: PROVIDER_ATTEMPTS,
      perAttemptTimeoutMs: PROVIDER_ATTEMPT_TIMEOUT_MS,
      deadline: io.deadline,
      signal: io.signal,
      onAttempt: (n) => {
        attempts = n;
        io.onAttempt();
      },
      clock: io.clock,
    });
  } catch (e) {
    if (io.signal.aborted || e instanceof StepError) throw e;
    throw new ProviderError(
      `${provider.name}/${model}: POST ${shownTarget(url)} failed after ${attempts === 1 ? "1 attempt" : `${attempts} attempts`}: ${networkFailure(e)}`,
    );
  }
  if (!res.ok) throw await httpFailure(provider, model, res);
  return res;
}

function shownTarget(url: string): string {
  try {
    return shownUrl(new URL(url), false);
  } catch {
    return "(an invalid URL)";
  }
}

/**
 * POSTs a JSON request to an HTTP provider with the shared retry policy and turns the reply into a
 * Completion with `parse` (`what` names the expected reply in the error when it does not parse).
 */
export async function postCompletion(
  io: ProviderIo,
  target: ProviderTarget,
  parse: (body: unknown) => Completion | null,
  what: string,
): Promise<Completion> {
  const { provider, model } = target;
  const res = await postWithRetries(io, target);
  let parsed: Completion | null = null;
  try {
    parsed = parse(await res.json());
  } catch {
    parsed = null;
  }
  if (!parsed) throw new ProviderError(`${provider.name}/${model}: the reply is not ${what}`);
  return parsed;
}

/**
 * A streaming call (docs/agents-and-tools.md, "Streaming"): POSTed with the shared retry policy up to
 * its answer's headers (a failure before the first chunk falls back as any failure does), then
 * its Server-Sent Events read with `read`, each chunk handed to `io.stream` as it arrives. A
 * stream that breaks after its first chunk resets what was shown and fails the call (the gateway
 * then tries the group's next model).
 */
export async function postStreaming(
  io: ProviderIo & { stream: TextSink },
  target: ProviderTarget,
  read: StreamReader,
): Promise<Completion> {
  const { provider, model } = target;
  const res = await postWithRetries(io, target);
  if (!res.body) throw new ProviderError(`${provider.name}/${model}: the stream has no body`);
  return readStream(res.body, io, `${provider.name}/${model}`, read);
}

/** Reads a provider's event stream into a completion, handing each chunk to `io.stream`. */
export async function readStream(
  body: ReadableStream<Uint8Array>,
  io: ProviderIo & { stream: TextSink },
  who: string,
  read: StreamReader,
): Promise<Completion> {
  const reply: StreamedReply = { text: "", inputTokens: null, outputTokens: null, done: false };
  try {
    for await (const ev of readSse(
      body,
      MAX_STREAM_EVENT_BYTES,
      () => new ProviderError(`${who}: a stream event is too large`),
    )) {
      if (io.signal.aborted) throw io.signal.reason;
      const chunk = read(ev, reply);
      if (chunk !== "") {
        reply.text += chunk;
        io.stream.text(chunk);
      }
      if (reply.done) break;
    }
  } catch (e) {
    if (reply.text !== "") io.stream.reset();
    if (io.signal.aborted) throw io.signal.reason ?? e;
    throw e instanceof ProviderError ? e : new ProviderError(`${who}: the stream broke off`);
  }
  if (!reply.done && reply.text === "") throw new ProviderError(`${who}: the stream ended without a reply`);
  io.stream.end();
  const usage =
    reply.inputTokens === null || reply.outputTokens === null
      ? null
      : { input_tokens: reply.inputTokens, output_tokens: reply.outputTokens };
  return { text: reply.text, usage, toolCalls: [] };
}

/** A streamed event's JSON data, or null. */
export function eventJson(ev: SseEvent): Record<string, unknown> | null {
  try {
    const v = JSON.parse(ev.data) as unknown;
    return typeof v === "object" && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/** A finite, non-negative token count, or null. */
export function tokenCount(v: unknown): number | null {
  return typeof v === "number" && Number.isFinite(v) && v >= 0 ? v : null;
}
