/**
 * Streamable HTTP is the MCP transport current servers speak: every request is a POST whose answer
 * is JSON or an event stream, the session is carried in headers and closed with a DELETE. A server
 * that refuses the first POST is left to the older HTTP+SSE transport (http-sse.ts).
 */
import type { Json, JsonObject } from "../bundle.ts";
import { readSse } from "../common/sse.ts";
import {
  type Channel,
  describe,
  MAX_MESSAGE_BYTES,
  McpError,
  type McpOptions,
  pick,
  readJsonCapped,
  timed,
} from "./channel.ts";

export const PROTOCOL_VERSION = "2025-06-18";
/** `initialize` answers that mean "not Streamable HTTP here" (MCP's backwards-compatibility rule). */
const FALLBACK_STATUSES = new Set([400, 404, 405]);

export class StreamableChannel implements Channel {
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

  private post(body: JsonObject, signal: AbortSignal, extra?: Record<string, string>): Promise<Response> {
    return this.opts.fetch(this.opts.url, {
      method: "POST",
      headers: extra ? { ...this.headers(), ...extra } : this.headers(),
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

  request(
    method: string,
    params: JsonObject | undefined,
    signal: AbortSignal,
    headers?: Record<string, string>,
  ): Promise<Json> {
    return timed(signal, this.opts.timeoutMs, method, async (s) => {
      const id = this.nextId++;
      const res = await this.post({ jsonrpc: "2.0", id, method, ...(params ? { params } : {}) }, s, headers);
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
