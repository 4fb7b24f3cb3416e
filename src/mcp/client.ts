/**
 * A small MCP client for what agent steps need: `initialize`, `notifications/initialized`,
 * `tools/list` (following `nextCursor`), `tools/call`, and closing the session. It speaks
 * Streamable HTTP (JSON or `text/event-stream` answers, `Mcp-Session-Id` and
 * `MCP-Protocol-Version` headers, `DELETE` at the end) and falls back to the older HTTP+SSE
 * transport (GET the event stream, POST to its `endpoint`) when the `initialize` POST answers
 * 400, 404 or 405, as ktsu's servers need.
 *
 * Why not the official `@modelcontextprotocol/client`: it runs in workerd unchanged, but the client
 * with both transports bundles to about 89 KiB gzip (zod included), which would take the Worker
 * with 50 workflows (112 KiB with this file) to about 200 KiB, over the 150 KiB budget; this file
 * does the tools subset in a few KiB. It sits behind `ToolHost`/`ToolSession` (src/engine/types.ts), so swapping it for the
 * official client later touches src/run/tool-host.ts only.
 *
 * Every request goes through the run's `fetch` (its outbound limit), with `redirect: "manual"`;
 * the caller has checked the host. Errors name the method and an HTTP status or JSON-RPC code,
 * never a header value.
 */
import type { Json, JsonObject } from "../bundle.ts";
import type { ToolInfo, ToolResult, ToolSession } from "../engine/types.ts";
import { readSse } from "./sse.ts";

export const PROTOCOL_VERSION = "2025-06-18";
/** What the HTTP+SSE transport's servers speak. */
export const LEGACY_PROTOCOL_VERSION = "2024-11-05";
const CLIENT_INFO = { name: "workflow-edge", version: "1.0.0" };
/** Largest JSON-RPC message read from a server. */
export const MAX_MESSAGE_BYTES = 4 * 1024 * 1024;
/** A tool result's text is cut here before it goes back to the model (and into the record). */
export const MAX_RESULT_CHARS = 32 * 1024;
/** `tools/list` pages followed at most (a server whose cursor never ends cannot loop us). */
const MAX_LIST_PAGES = 50;
/** `initialize` answers that mean "not Streamable HTTP here" (MCP's backwards-compatibility rule). */
const FALLBACK_STATUSES = new Set([400, 404, 405]);

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

interface Channel {
  readonly transport: "streamable-http" | "sse";
  request(method: string, params: JsonObject | undefined, signal: AbortSignal): Promise<Json>;
  notify(method: string, params: JsonObject | undefined, signal: AbortSignal): Promise<void>;
  close(): Promise<void>;
}

/** `scheme://host/path` of a URL: never its query (it may carry a key). */
function describe(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return "(invalid URL)";
  }
}

/** The step's signal plus a per-request timeout; a timeout becomes an McpError, an abort stays itself. */
function timed<T>(
  signal: AbortSignal,
  ms: number,
  what: string,
  work: (s: AbortSignal) => Promise<T>,
): Promise<T> {
  // A timer that is cleared when the request settles: a pending timer keeps an idle object awake.
  const timeout = new AbortController();
  const timer = setTimeout(() => timeout.abort(new McpError(`${what}: timeout`)), Math.max(1, ms));
  const both = AbortSignal.any([signal, timeout.signal]);
  return work(both)
    .catch((e: unknown) => {
      if (signal.aborted) throw signal.reason ?? e;
      if (timeout.signal.aborted) throw new McpError(`${what}: no answer within ${Math.round(ms / 1000)} s`);
      if (e instanceof McpError) throw e;
      throw new McpError(`${what}: ${e instanceof Error ? e.message : String(e)}`);
    })
    .finally(() => clearTimeout(timer));
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
function pick(
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

async function readJsonCapped(res: Response, what: string): Promise<unknown> {
  const declared = Number(res.headers.get("content-length"));
  if (Number.isFinite(declared) && declared > MAX_MESSAGE_BYTES) {
    res.body?.cancel().catch(() => {});
    throw new McpError(`${what}: the answer is over ${MAX_MESSAGE_BYTES} bytes`);
  }
  const text = await res.text();
  if (text.length > MAX_MESSAGE_BYTES)
    throw new McpError(`${what}: the answer is over ${MAX_MESSAGE_BYTES} bytes`);
  try {
    return JSON.parse(text);
  } catch {
    throw new McpError(`${what}: the answer is not JSON`);
  }
}

// ---- Streamable HTTP ---------------------------------------------------------------------------

class StreamableChannel implements Channel {
  readonly transport = "streamable-http" as const;
  private sessionId: string | null = null;
  private protocol: string | null = null;
  private nextId = 1;
  private readonly opts: McpOptions;

  constructor(opts: McpOptions) {
    this.opts = opts;
  }

  private headers(): Record<string, string> {
    const h: Record<string, string> = {
      ...this.opts.headers,
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
    };
    if (this.sessionId !== null) h["mcp-session-id"] = this.sessionId;
    if (this.protocol !== null) h["mcp-protocol-version"] = this.protocol;
    return h;
  }

  private post(body: JsonObject, signal: AbortSignal): Promise<Response> {
    return this.opts.fetch(this.opts.url, {
      method: "POST",
      headers: this.headers(),
      body: JSON.stringify(body),
      redirect: "manual",
      signal,
    });
  }

  /** Sends `initialize`; null when the server answered a status that means "try the old transport". */
  async initialize(params: JsonObject, signal: AbortSignal): Promise<Json | null> {
    return timed(signal, this.opts.timeoutMs, "initialize", async (s) => {
      const id = this.nextId++;
      const res = await this.post({ jsonrpc: "2.0", id, method: "initialize", params }, s);
      if (FALLBACK_STATUSES.has(res.status)) {
        res.body?.cancel().catch(() => {});
        return null;
      }
      this.sessionId = res.headers.get("mcp-session-id");
      const result = await this.read(res, id, "initialize");
      const version = (result as { protocolVersion?: unknown } | null)?.protocolVersion;
      this.protocol = typeof version === "string" ? version : PROTOCOL_VERSION;
      return result;
    });
  }

  request(method: string, params: JsonObject | undefined, signal: AbortSignal): Promise<Json> {
    return timed(signal, this.opts.timeoutMs, method, async (s) => {
      const id = this.nextId++;
      const res = await this.post({ jsonrpc: "2.0", id, method, ...(params ? { params } : {}) }, s);
      return this.read(res, id, method);
    });
  }

  notify(method: string, params: JsonObject | undefined, signal: AbortSignal): Promise<void> {
    return timed(signal, this.opts.timeoutMs, method, async (s) => {
      const res = await this.post({ jsonrpc: "2.0", method, ...(params ? { params } : {}) }, s);
      res.body?.cancel().catch(() => {});
      if (!res.ok) throw new McpError(`${method}: HTTP ${res.status}`);
    });
  }

  private async read(res: Response, id: number, method: string): Promise<Json> {
    if (!res.ok) {
      res.body?.cancel().catch(() => {});
      throw new McpError(`${method}: HTTP ${res.status} from ${describe(this.opts.url)}`);
    }
    const type = res.headers.get("content-type") ?? "";
    if (type.includes("text/event-stream") && res.body) {
      const tooLarge = () => new McpError(`${method}: an event is over ${MAX_MESSAGE_BYTES} bytes`);
      for await (const ev of readSse(res.body, MAX_MESSAGE_BYTES, tooLarge)) {
        let message: unknown;
        try {
          message = JSON.parse(ev.data);
        } catch {
          continue; // Not a JSON-RPC message (a comment, a ping): keep reading.
        }
        const hit = pick(message, id, method);
        if (hit.found) return hit.result;
      }
      throw new McpError(`${method}: the event stream ended without an answer`);
    }
    const hit = pick(await readJsonCapped(res, method), id, method);
    if (!hit.found) throw new McpError(`${method}: the answer has no result for request ${id}`);
    return hit.result;
  }

  async close(): Promise<void> {
    if (this.sessionId === null) return;
    // Best effort: a server that does not support DELETE answers 405, and that is fine.
    const closing = new AbortController();
    const timer = setTimeout(() => closing.abort(), Math.min(this.opts.timeoutMs, 5_000));
    try {
      const res = await this.opts.fetch(this.opts.url, {
        method: "DELETE",
        headers: this.headers(),
        redirect: "manual",
        signal: closing.signal,
      });
      res.body?.cancel().catch(() => {});
    } catch {
      // Already gone.
    } finally {
      clearTimeout(timer);
    }
  }
}

// ---- HTTP+SSE (protocol 2024-11-05) ----------------------------------------------------------------

interface Waiter {
  resolve(message: unknown): void;
  reject(e: unknown): void;
}

class SseChannel implements Channel {
  readonly transport = "sse" as const;
  private nextId = 1;
  private readonly waiters = new Map<number, Waiter>();
  private closed: Error | null = null;
  private readonly opts: McpOptions;
  private readonly stream: AbortController;
  private readonly endpoint: string;

  private constructor(opts: McpOptions, stream: AbortController, endpoint: string) {
    this.opts = opts;
    this.stream = stream;
    this.endpoint = endpoint;
  }

  /**
   * GETs the event stream and waits for its `endpoint` event. ktsu's server files give the
   * server's base URL and ktsu appends `/sse`: when the URL itself is not an event stream,
   * `<url>/sse` is tried too.
   */
  static async open(opts: McpOptions, signal: AbortSignal): Promise<SseChannel> {
    const candidates = [opts.url];
    if (!new URL(opts.url).pathname.endsWith("/sse")) candidates.push(`${opts.url.replace(/\/+$/, "")}/sse`);
    let last = "";
    for (const url of candidates) {
      const stream = new AbortController();
      const onStepAbort = () => stream.abort(signal.reason);
      signal.addEventListener("abort", onStepAbort, { once: true });
      // The stream outlives this request: only the wait for its headers is timed.
      const timer = setTimeout(() => stream.abort(new McpError("timeout")), Math.max(1, opts.timeoutMs));
      let res: Response;
      try {
        res = await opts.fetch(url, {
          method: "GET",
          headers: { ...opts.headers, accept: "text/event-stream" },
          redirect: "manual",
          signal: stream.signal,
        });
      } catch (e) {
        signal.removeEventListener("abort", onStepAbort);
        if (signal.aborted) throw signal.reason ?? e;
        if (stream.signal.aborted) {
          throw new McpError(`GET ${describe(url)}: no answer within ${Math.round(opts.timeoutMs / 1000)} s`);
        }
        throw new McpError(`GET ${describe(url)}: ${e instanceof Error ? e.message : String(e)}`);
      } finally {
        clearTimeout(timer);
      }
      const type = res.headers.get("content-type") ?? "";
      if (!res.ok || !type.includes("text/event-stream") || !res.body) {
        res.body?.cancel().catch(() => {});
        signal.removeEventListener("abort", onStepAbort);
        last = `GET ${describe(url)}: HTTP ${res.status}${res.ok ? ` (${type || "no content type"})` : ""}`;
        continue;
      }
      let announce: (endpoint: string) => void = () => {};
      let fail: (e: unknown) => void = () => {};
      const endpoint = new Promise<string>((resolve, reject) => {
        announce = resolve;
        fail = reject;
      });
      const holder: { channel: SseChannel | null } = { channel: null };
      // Read the stream for as long as the session lives: answers to our POSTs arrive here.
      (async () => {
        const tooLarge = () => new McpError(`event stream: an event is over ${MAX_MESSAGE_BYTES} bytes`);
        try {
          for await (const ev of readSse(
            res.body as ReadableStream<Uint8Array>,
            MAX_MESSAGE_BYTES,
            tooLarge,
          )) {
            if (ev.event === "endpoint") {
              const target = new URL(ev.data.trim(), url);
              // The official SDK's rule: messages go back to the origin the stream came from.
              if (target.origin !== new URL(url).origin) {
                throw new McpError("event stream: the endpoint is on another origin");
              }
              announce(target.href);
            } else if (ev.event === "message") {
              holder.channel?.dispatch(ev.data);
            }
          }
          throw new McpError("event stream: closed by the server");
        } catch (e) {
          const err =
            e instanceof McpError
              ? e
              : new McpError(`event stream: ${e instanceof Error ? e.message : String(e)}`);
          fail(err);
          holder.channel?.shutdown(err);
        } finally {
          signal.removeEventListener("abort", onStepAbort);
        }
      })();
      const target = await timed(signal, opts.timeoutMs, "endpoint event", (s) =>
        Promise.race([
          endpoint,
          new Promise<never>((_, reject) =>
            s.addEventListener("abort", () => reject(s.reason), { once: true }),
          ),
        ]),
      ).catch((e: unknown) => {
        stream.abort();
        throw e;
      });
      const channel = new SseChannel(opts, stream, target);
      holder.channel = channel;
      return channel;
    }
    throw new McpError(`neither Streamable HTTP nor HTTP+SSE answered at ${describe(opts.url)} (${last})`);
  }

  dispatch(data: string): void {
    let message: unknown;
    try {
      message = JSON.parse(data);
    } catch {
      return;
    }
    for (const m of Array.isArray(message) ? message : [message]) {
      const id = (m as { id?: unknown } | null)?.id;
      if (typeof id !== "number") continue;
      const w = this.waiters.get(id);
      if (w) {
        this.waiters.delete(id);
        w.resolve(m);
      }
    }
  }

  shutdown(err: Error): void {
    this.closed = err;
    for (const w of this.waiters.values()) w.reject(err);
    this.waiters.clear();
  }

  private async send(body: JsonObject, signal: AbortSignal, what: string): Promise<void> {
    const res = await this.opts.fetch(this.endpoint, {
      method: "POST",
      headers: { ...this.opts.headers, "content-type": "application/json" },
      body: JSON.stringify(body),
      redirect: "manual",
      signal,
    });
    res.body?.cancel().catch(() => {});
    if (!res.ok) throw new McpError(`${what}: HTTP ${res.status} from ${describe(this.endpoint)}`);
  }

  request(method: string, params: JsonObject | undefined, signal: AbortSignal): Promise<Json> {
    return timed(signal, this.opts.timeoutMs, method, async (s) => {
      if (this.closed) throw this.closed;
      const id = this.nextId++;
      const answer = new Promise<unknown>((resolve, reject) => {
        this.waiters.set(id, { resolve, reject });
        s.addEventListener(
          "abort",
          () => {
            this.waiters.delete(id);
            reject(s.reason);
          },
          { once: true },
        );
      });
      answer.catch(() => {}); // Observed below; a rejection before then must not be unhandled.
      await this.send({ jsonrpc: "2.0", id, method, ...(params ? { params } : {}) }, s, method);
      const hit = pick(await answer, id, method);
      if (!hit.found) throw new McpError(`${method}: no result`);
      return hit.result;
    });
  }

  notify(method: string, params: JsonObject | undefined, signal: AbortSignal): Promise<void> {
    return timed(signal, this.opts.timeoutMs, method, (s) =>
      this.send({ jsonrpc: "2.0", method, ...(params ? { params } : {}) }, s, method),
    );
  }

  async close(): Promise<void> {
    this.shutdown(new McpError("the session is closed"));
    this.stream.abort();
  }
}

// ---- Session -----------------------------------------------------------------------------------

function initializeParams(version: string, config: JsonObject | undefined): JsonObject {
  return {
    protocolVersion: version,
    capabilities: {},
    clientInfo: CLIENT_INFO,
    ...(config && Object.keys(config).length > 0 ? { config } : {}),
  };
}

/** Opens an MCP session: Streamable HTTP first, the HTTP+SSE transport when that is refused. */
export async function connectMcp(opts: McpOptions, signal: AbortSignal): Promise<McpSession> {
  const streamable = new StreamableChannel(opts);
  const init = await streamable.initialize(initializeParams(PROTOCOL_VERSION, opts.config), signal);
  let channel: Channel = streamable;
  if (init === null) {
    const sse = await SseChannel.open(opts, signal);
    try {
      await sse.request("initialize", initializeParams(LEGACY_PROTOCOL_VERSION, opts.config), signal);
    } catch (e) {
      await sse.close();
      throw e;
    }
    channel = sse;
  }
  try {
    await channel.notify("notifications/initialized", undefined, signal);
  } catch (e) {
    await channel.close();
    throw e;
  }
  return new McpSession(channel);
}

function textOfContent(content: unknown): string {
  if (!Array.isArray(content)) return "";
  const parts: string[] = [];
  for (const block of content) {
    if (typeof block !== "object" || block === null) continue;
    const b = block as {
      type?: unknown;
      text?: unknown;
      mimeType?: unknown;
      resource?: unknown;
      uri?: unknown;
    };
    if (b.type === "text" && typeof b.text === "string") parts.push(b.text);
    else if (b.type === "resource") {
      const r = (b.resource ?? {}) as { uri?: unknown; text?: unknown };
      parts.push(typeof r.text === "string" ? r.text : `[resource ${String(r.uri ?? "")}]`);
    } else if (b.type === "resource_link") parts.push(`[resource link ${String(b.uri ?? "")}]`);
    else
      parts.push(`[${String(b.type ?? "content")}${typeof b.mimeType === "string" ? ` ${b.mimeType}` : ""}]`);
  }
  return parts.join("\n");
}

export function toToolResult(result: Json): ToolResult {
  const r = (
    typeof result === "object" && result !== null && !Array.isArray(result) ? result : {}
  ) as JsonObject;
  let text = textOfContent(r.content);
  if (text.length > MAX_RESULT_CHARS) {
    text = `${text.slice(0, MAX_RESULT_CHARS)}\n[truncated: the tool returned ${text.length} characters]`;
  }
  const structured = r.structuredContent;
  return {
    text,
    structuredContent: structured === undefined ? null : structured,
    isError: r.isError === true,
  };
}

export class McpSession implements ToolSession {
  private readonly channel: Channel;

  constructor(channel: Channel) {
    this.channel = channel;
  }

  get transport(): "streamable-http" | "sse" {
    return this.channel.transport;
  }

  async listTools(signal: AbortSignal): Promise<ToolInfo[]> {
    const tools: ToolInfo[] = [];
    let cursor: string | null = null;
    for (let page = 0; page < MAX_LIST_PAGES; page++) {
      const result = (await this.channel.request("tools/list", cursor ? { cursor } : undefined, signal)) as {
        tools?: unknown;
        nextCursor?: unknown;
      } | null;
      const list = Array.isArray(result?.tools) ? result.tools : [];
      for (const t of list) {
        if (typeof t !== "object" || t === null || typeof (t as { name?: unknown }).name !== "string")
          continue;
        const { name, description, inputSchema } = t as {
          name: string;
          description?: unknown;
          inputSchema?: unknown;
        };
        tools.push({
          name,
          description: typeof description === "string" ? description : null,
          inputSchema:
            typeof inputSchema === "object" && inputSchema !== null && !Array.isArray(inputSchema)
              ? (inputSchema as JsonObject)
              : { type: "object" },
        });
      }
      cursor = typeof result?.nextCursor === "string" && result.nextCursor !== "" ? result.nextCursor : null;
      if (cursor === null) return tools;
    }
    throw new McpError(`tools/list: more than ${MAX_LIST_PAGES} pages`);
  }

  async callTool(name: string, args: JsonObject, signal: AbortSignal): Promise<ToolResult> {
    return toToolResult(await this.channel.request("tools/call", { name, arguments: args }, signal));
  }

  close(): Promise<void> {
    return this.channel.close();
  }
}
