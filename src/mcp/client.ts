/**
 * Agent steps need only the tools subset of MCP (initialize, list the tools, call them, close),
 * behind `ToolHost`/`ToolSession` (src/engine/types.ts). The official `@modelcontextprotocol/client`
 * runs in workerd, but with both transports it bundles to about 89 KiB gzip (zod included), which
 * would take the Worker with 50 workflows (112 KiB with this client) to about 200 KiB, over the
 * 150 KiB budget; this client does the subset in a few KiB, and swapping it for the official one
 * later touches src/mcp/tool-host.ts only (docs/agents-and-tools.md).
 */
import type { Json, JsonObject } from "../bundle.ts";
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

  async callTool(
    name: string,
    args: JsonObject,
    signal: AbortSignal,
    headers?: Record<string, string>,
  ): Promise<ToolResult> {
    return toToolResult(await this.channel.request("tools/call", { name, arguments: args }, signal, headers));
  }

  close(): Promise<void> {
    return this.channel.close();
  }
}
