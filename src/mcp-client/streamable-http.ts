/**
 * Streamable HTTP is the MCP transport current servers speak: every request is a POST whose answer
 * is JSON or an event stream. In the 2025 revisions (`initialize` first) the session is carried in
 * headers and closed with a DELETE; a server that refuses the first POST is left to the older
 * HTTP+SSE transport (http-sse.ts). In the stateless 2026-07-28 revision there is no session: the
 * client asks `server/discover` once, then every request carries the protocol version, the
 * client's info and capabilities in its `_meta` (and `Mcp-Protocol-Version`, `Mcp-Method`,
 * `Mcp-Name` headers), and nothing is opened or closed.
 */

import type { Json, JsonObject } from "../bundle.ts";
import { MAX_JSON_DEPTH, nestsDeeperThan } from "../common/json-depth.ts";
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

/** The newest 2025 revision: offered in `initialize` (a server answers the one it speaks). */
export const PROTOCOL_VERSION = "2025-11-25";
/** The stateless revision, spoken with a server that answers `server/discover` with it. */
export const STATELESS_PROTOCOL_VERSION = "2026-07-28";
/** Every revision this client speaks, newest first (an `initialize` answer outside it is refused). */
export const SPOKEN_VERSIONS = [
  STATELESS_PROTOCOL_VERSION,
  PROTOCOL_VERSION,
  "2025-06-18",
  "2025-03-26",
  "2024-11-05",
];
/** `tools/call`'s argument the `Mcp-Name` header repeats (2026-07-28). */
const NAME_OF: Record<string, string> = { "tools/call": "name" };
/** The `_meta` of a stateless (2026-07-28) request: the client's envelope and the revision. */
function statelessMeta(envelope: JsonObject): JsonObject {
  return { ...envelope, "io.modelcontextprotocol/protocolVersion": STATELESS_PROTOCOL_VERSION };
}

/** `initialize` answers that mean "not Streamable HTTP here" (MCP's backwards-compatibility rule). */
const FALLBACK_STATUSES = new Set([400, 404, 405]);

export class StreamableChannel implements Channel {
  readonly transport = "streamable-http" as const;
  private sessionId: string | null = null;
  private protocol: string | null = null;
  private nextId = 1;
  private readonly opts: McpOptions;
  /** Set once `server/discover` offered the stateless revision: the `_meta` every request carries. */
  private envelope: JsonObject | null = null;

  constructor(opts: McpOptions) {
    this.opts = opts;
  }

  /** The revision spoken (null before `initialize` or `server/discover`). */
  get version(): string | null {
    return this.protocol;
  }

  /** Speaks the stateless revision from now on (a server known to, or that answered `server/discover`). */
  speakStateless(envelope: JsonObject): void {
    this.envelope = statelessMeta(envelope);
    this.protocol = STATELESS_PROTOCOL_VERSION;
  }

  /**
   * Asks `server/discover` (2026-07-28): `stateless` when the server offers that revision, and the
   * channel then speaks it; `initialize` for a 2025-era server (it answers 400 or 404, a JSON-RPC
   * error, or a result without the revision); `no-post` when POST is not served at all (405: an
   * HTTP+SSE server, so `initialize` would be refused too).
   */
  async discover(envelope: JsonObject, signal: AbortSignal): Promise<"stateless" | "initialize" | "no-post"> {
    return timed(signal, this.opts.timeoutMs, "server/discover", async (s) => {
      const id = this.nextId++;
      const res = await this.post(
        { jsonrpc: "2.0", id, method: "server/discover", params: { _meta: statelessMeta(envelope) } },
        s,
        { "mcp-protocol-version": STATELESS_PROTOCOL_VERSION, "mcp-method": "server/discover" },
      );
      if (res.status >= 400 && res.status < 500 && res.status !== 401 && res.status !== 403) {
        res.body?.cancel().catch(() => {});
        return res.status === 405 ? "no-post" : "initialize";
      }
      let result: Json;
      try {
        result = await this.read(res, id, "server/discover");
      } catch (e) {
        if (e instanceof McpError && /JSON-RPC error/.test(e.message)) return "initialize";
        throw e;
      }
      const versions = (result as { supportedVersions?: unknown } | null)?.supportedVersions;
      if (!Array.isArray(versions) || !versions.includes(STATELESS_PROTOCOL_VERSION)) return "initialize";
      this.speakStateless(envelope);
      return "stateless";
    });
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
      if (typeof version === "string" && !SPOKEN_VERSIONS.includes(version)) {
        throw new McpError(
          `initialize: the server speaks protocol ${version.slice(0, 40)}, not one of ${SPOKEN_VERSIONS.slice(1).join(", ")}`,
        );
      }
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
      let body = params;
      let extra = headers;
      if (this.envelope !== null) {
        // Stateless: the version and the client travel with every request, in `_meta` and headers.
        const meta = (params?._meta ?? {}) as JsonObject;
        body = { ...params, _meta: { ...meta, ...this.envelope } };
        const nameField = NAME_OF[method];
        const name = nameField !== undefined ? params?.[nameField] : undefined;
        extra = {
          ...headers,
          "mcp-method": method,
          ...(typeof name === "string" && /^[\x20-\x7e]*$/.test(name) ? { "mcp-name": name } : {}),
        };
      }
      const res = await this.post(
        { jsonrpc: "2.0", id, method, ...(body ? { params: body } : {}) },
        s,
        extra,
      );
      return this.read(res, id, method);
    });
  }

  notify(method: string, params: JsonObject | undefined, signal: AbortSignal): Promise<void> {
    // The stateless revision has no `notifications/initialized` (nor any session to tell).
    if (this.envelope !== null) return Promise.resolve();
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
        if (nestsDeeperThan(ev.data)) {
          throw new McpError(`${method}: an event nests deeper than ${MAX_JSON_DEPTH} levels`);
        }
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
