/**
 * Agent steps reach tool servers over two MCP transports that must behave alike: every request goes
 * through the run's `fetch` (its outbound limit) with `redirect: "manual"` to a host the caller has
 * checked, is timed within the step, never reads an unbounded answer, and fails with an error that
 * names the method and an HTTP status or JSON-RPC code, never a header value or a URL's query. What
 * a transport is and those shared rules live here, so neither transport can drift from them.
 */
import type { Json, JsonObject } from "../bundle.ts";
import { MAX_JSON_DEPTH, nestsDeeperThan } from "../common/json-depth.ts";
import { withTimeout } from "../common/timeout.ts";
import { shownUrl } from "../engine/net.ts";
import { StepError } from "../engine/types.ts";

/** Largest JSON-RPC message read from a server. */
export const MAX_MESSAGE_BYTES = 4 * 1024 * 1024;

export class McpError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "McpError";
  }
}

export type FetchLike = (input: string | Request, init?: RequestInit) => Promise<Response>;

export interface McpOptions {
  url: string;
  /** Sent with every request (the server's auth header). */
  headers: Record<string, string>;
  fetch: FetchLike;
  /** Per request. */
  timeoutMs: number;
  /** Sent as `config` in `initialize` (ktsu's servers read their params there). */
  config?: JsonObject;
}

export interface Channel {
  readonly transport: "streamable-http" | "sse";
  /** `headers`: added to this request's own HTTP request (a tool call's `traceparent`). */
  request(
    method: string,
    params: JsonObject | undefined,
    signal: AbortSignal,
    headers?: Record<string, string>,
  ): Promise<Json>;
  notify(method: string, params: JsonObject | undefined, signal: AbortSignal): Promise<void>;
  close(): Promise<void>;
}

/**
 * `scheme://host/path` of a URL: never its query (it may carry a key). A server url built from a
 * secret is shown by its origin once the run masks the message (docs/file-format.md, "Env and secrets").
 */
export function describe(url: string): string {
  try {
    return shownUrl(new URL(url), false);
  } catch {
    return "(invalid URL)";
  }
}

/** The step's signal plus a per-request timeout; a timeout becomes an McpError, an abort stays itself. */
export function timed<T>(
  signal: AbortSignal,
  ms: number,
  what: string,
  work: (s: AbortSignal) => Promise<T>,
): Promise<T> {
  // withTimeout clears its timer when the request settles: a pending timer keeps an idle object awake.
  return withTimeout(Math.max(1, ms), (timeout) =>
    work(AbortSignal.any([signal, timeout])).catch((e: unknown) => {
      if (signal.aborted) throw signal.reason ?? e;
      if (timeout.aborted) throw new McpError(`${what}: no answer within ${Math.round(ms / 1000)} s`);
      // A verdict on the step (a refused OAuth grant: tool_auth_failed) stays itself.
      if (e instanceof McpError || e instanceof StepError) throw e;
      throw new McpError(`${what}: ${e instanceof Error ? e.message : String(e)}`);
    }),
  );
}

function rpcError(method: string, error: unknown): McpError {
  const e = (typeof error === "object" && error !== null ? error : {}) as {
    code?: unknown;
    message?: unknown;
  };
  const message = typeof e.message === "string" ? e.message.slice(0, 300) : "error";
  return new McpError(`${method}: JSON-RPC error ${typeof e.code === "number" ? e.code : "?"}: ${message}`);
}

/** The result of response `id` among one or several JSON-RPC messages, or undefined. */
export function pick(
  message: unknown,
  id: number,
  method: string,
): { found: true; result: Json } | { found: false } {
  const list = Array.isArray(message) ? message : [message];
  for (const m of list) {
    if (typeof m !== "object" || m === null) continue;
    const r = m as { id?: unknown; result?: Json; error?: unknown };
    if (r.id !== id || (!("result" in r) && !("error" in r))) continue;
    if (r.error !== undefined) throw rpcError(method, r.error);
    return { found: true, result: r.result ?? null };
  }
  return { found: false };
}

export async function readJsonCapped(res: Response, what: string): Promise<unknown> {
  const declared = Number(res.headers.get("content-length"));
  if (Number.isFinite(declared) && declared > MAX_MESSAGE_BYTES) {
    res.body?.cancel().catch(() => {});
    throw new McpError(`${what}: the answer is over ${MAX_MESSAGE_BYTES} bytes`);
  }
  const text = await res.text();
  if (text.length > MAX_MESSAGE_BYTES)
    throw new McpError(`${what}: the answer is over ${MAX_MESSAGE_BYTES} bytes`);
  if (nestsDeeperThan(text))
    throw new McpError(`${what}: the answer nests deeper than ${MAX_JSON_DEPTH} levels`);
  try {
    return JSON.parse(text);
  } catch {
    throw new McpError(`${what}: the answer is not JSON`);
  }
}
