/**
 * Agent steps need only the tools subset of MCP (initialize, list the tools, call them, close),
 * behind `ToolHost`/`ToolSession` (src/engine/types.ts). Which revision a server speaks is found
 * once per isolate and kept (docs/agents-and-tools.md, "Protocol versions"): `server/discover`
 * first (the stateless 2026-07-28 revision), else `initialize` over Streamable HTTP offering
 * 2025-11-25 (the server answers 2025-11-25, 2025-06-18 or 2025-03-26), else the HTTP+SSE transport
 * of 2024-11-05. The official `@modelcontextprotocol/client`
 * runs in workerd, but with both transports it bundles to about 89 KiB gzip (zod included), which
 * would take the Worker with 50 workflows (112 KiB with this client) to about 200 KiB, over the
 * 150 KiB budget; this client does the subset in a few KiB, and swapping it for the official one
 * later touches src/mcp-client/tool-host.ts only (docs/agents-and-tools.md).
 */
import type { Json, JsonObject } from "../bundle.ts";
import { describeViolations, validateJson } from "../engine/schema.ts";
import type { ToolInfo, ToolResult, ToolSession } from "../engine/types.ts";
import { type Channel, McpError, type McpOptions } from "./channel.ts";
import { LEGACY_PROTOCOL_VERSION, SseChannel } from "./http-sse.ts";
import { PROTOCOL_VERSION, StreamableChannel } from "./streamable-http.ts";

const CLIENT_INFO = { name: "workflow-edge", version: "1.0.0" };
/** A tool result's text is cut here before it goes back to the model (and into the record). */
export const MAX_RESULT_CHARS = 32 * 1024;
/** `tools/list` pages followed at most (a server whose cursor never ends cannot loop us). */
const MAX_LIST_PAGES = 50;

function initializeParams(version: string, config: JsonObject | undefined): JsonObject {
  return {
    protocolVersion: version,
    capabilities: {},
    clientInfo: CLIENT_INFO,
    ...(config && Object.keys(config).length > 0 ? { config } : {}),
  };
}

/** What the stateless revision sends in every request's `_meta` besides the version. */
const ENVELOPE: JsonObject = {
  "io.modelcontextprotocol/clientInfo": CLIENT_INFO,
  "io.modelcontextprotocol/clientCapabilities": {},
};

/** How each server was reached, by URL, for the isolate's life: the next connect starts there. */
const spoken = new Map<string, "stateless" | "streamable-http" | "sse">();

/** Forgets what each server spoke (tests). */
export function forgetServers(): void {
  spoken.clear();
}

/**
 * Opens an MCP session: the stateless revision when the server answers `server/discover`, else
 * Streamable HTTP with `initialize`, else the HTTP+SSE transport.
 */
export async function connectMcp(opts: McpOptions, signal: AbortSignal): Promise<McpSession> {
  let known = spoken.get(opts.url);
  const streamable = new StreamableChannel(opts);
  if (known === "stateless") {
    // Asked before in this isolate: no second `server/discover`.
    streamable.speakStateless(ENVELOPE);
    return new McpSession(streamable);
  }
  if (known === undefined) {
    const found = await streamable.discover(ENVELOPE, signal);
    if (found === "stateless") {
      spoken.set(opts.url, "stateless");
      return new McpSession(streamable);
    }
    if (found === "no-post") known = "sse";
  }
  const init =
    known === "sse"
      ? null
      : await streamable.initialize(initializeParams(PROTOCOL_VERSION, opts.config), signal);
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
  spoken.set(opts.url, channel.transport);
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

/**
 * A tool's answer as the agent sees it. When the tool declares an `outputSchema`, its
 * `structuredContent` is the answer (checked against the schema: a mismatch is an error result
 * that tells the model what is wrong); otherwise the text blocks, with `structuredContent` beside.
 */
export function toToolResult(result: Json, outputSchema?: JsonObject): ToolResult {
  const r = (
    typeof result === "object" && result !== null && !Array.isArray(result) ? result : {}
  ) as JsonObject;
  let text = textOfContent(r.content);
  if (text.length > MAX_RESULT_CHARS) {
    text = `${text.slice(0, MAX_RESULT_CHARS)}\n[truncated: the tool returned ${text.length} characters]`;
  }
  const structured = r.structuredContent;
  if (outputSchema !== undefined && r.isError !== true) {
    if (structured === undefined) {
      return {
        text: "The tool declares an outputSchema but returned no structuredContent",
        structuredContent: null,
        isError: true,
      };
    }
    const violations = validateJson(outputSchema, structured);
    if (violations.length > 0) {
      return {
        text: `The tool's structuredContent does not match its outputSchema: ${describeViolations(violations, 5)}`,
        structuredContent: null,
        isError: true,
      };
    }
    return { text: "", structuredContent: structured, isError: false };
  }
  return {
    text,
    structuredContent: structured === undefined ? null : structured,
    isError: r.isError === true,
  };
}

export class McpSession implements ToolSession {
  private readonly channel: Channel;
  /** Each listed tool's `outputSchema`, by name. */
  private readonly outputSchemas = new Map<string, JsonObject>();

  constructor(channel: Channel) {
    this.channel = channel;
  }

  get transport(): "streamable-http" | "sse" {
    return this.channel.transport;
  }

  /** The protocol revision spoken with the server. */
  get version(): string {
    return this.channel instanceof StreamableChannel
      ? (this.channel.version ?? PROTOCOL_VERSION)
      : LEGACY_PROTOCOL_VERSION;
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
        const { name, description, inputSchema, outputSchema } = t as {
          name: string;
          description?: unknown;
          inputSchema?: unknown;
          outputSchema?: unknown;
        };
        const output =
          typeof outputSchema === "object" && outputSchema !== null && !Array.isArray(outputSchema)
            ? (outputSchema as JsonObject)
            : undefined;
        if (output) this.outputSchemas.set(name, output);
        tools.push({
          ...(output ? { outputSchema: output } : {}),
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

  async callTool(
    name: string,
    args: JsonObject,
    signal: AbortSignal,
    headers?: Record<string, string>,
  ): Promise<ToolResult> {
    // The run's trace travels in `_meta` as well as the header (MCP's trace context convention).
    const traceparent = headers?.traceparent;
    const params: JsonObject = { name, arguments: args, ...(traceparent ? { _meta: { traceparent } } : {}) };
    return toToolResult(
      await this.channel.request("tools/call", params, signal, headers),
      this.outputSchemas.get(name),
    );
  }

  close(): Promise<void> {
    return this.channel.close();
  }
}
