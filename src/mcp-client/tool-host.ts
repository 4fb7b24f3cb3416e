/**
 * The run's `ToolHost`: how an agent step reaches its MCP servers. It refuses private hosts as
 * webhook steps do (unless ALLOW_PRIVATE_WEBHOOKS=true), sends every request through the run's
 * outbound limit (with the server's OAuth token when its file asks for OAuth: oauth.ts), and hands
 * the rest to the MCP client (src/mcp-client/). Tests and the workflow-test
 * runner give the engine another `ToolHost` instead (the runner checks the URL with `serverUrl`).
 */

import { checkOutboundUrl } from "../engine/net.ts";
import type { ToolHost } from "../engine/types.ts";
import { type FetchLike, McpError } from "./channel.ts";
import { connectMcp } from "./client.ts";
import { oauthFetch } from "./oauth.ts";

/** The server's URL, or an McpError saying why no request may go there. */
export function serverUrl(raw: string, allowPrivate: boolean): URL {
  const url = checkOutboundUrl(raw, allowPrivate);
  if (url instanceof URL) return url;
  if (url.refused === "invalid") throw new McpError("the server url is not a valid URL");
  if (url.refused === "scheme") throw new McpError(`the server url must be http(s), not ${url.protocol}`);
  throw new McpError(
    `refusing the private host ${url.host} (set ALLOW_PRIVATE_WEBHOOKS=true for local development)`,
  );
}

export function mcpToolHost(fetch: FetchLike, allowPrivate: boolean): ToolHost {
  return {
    async connect(target, signal) {
      const url = serverUrl(target.url, allowPrivate);
      const reach = target.oauth ? oauthFetch(fetch, url.href, target.oauth, allowPrivate) : fetch;
      return connectMcp(
        {
          url: url.href,
          headers: target.headers,
          fetch: reach,
          timeoutMs: target.timeoutMs,
          config: target.config,
        },
        signal,
      );
    },
  };
}
