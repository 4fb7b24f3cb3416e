/**
 * `npm run tool-server [-- --port N]`: the tool server the tests use (test/servers/mcp-sdk.ts), for
 * trying tool servers and OAuth by hand (docs/agents-and-tools.md, "OAuth"): an MCP server built on
 * the maintained SDK at `/mcp` (no auth), its OAuth-protected copy at `/oauth/mcp` with Protected
 * Resource Metadata, and an authorization server at `/as` that grants `client_credentials` and
 * `refresh_token` to one client. It prints the URLs and the client's credentials (made up for
 * local use, printed so you can paste them into `.dev.vars`). It listens on 127.0.0.1 only
 * (default port 9200; `--port 0` takes any free port). Ctrl-C stops it.
 */
import { parseArgs } from "node:util";
import { OAUTH_CLIENT_ID, startMcpSdk } from "../test/servers/mcp-sdk.ts";

/** Local-only credentials: the authorization server knows these and nothing else. */
const CLIENT_SECRET = "local-client-secret-5c1e";
const REFRESH_TOKEN = "local-refresh-token-8d2f";

const { values } = parseArgs({ options: { port: { type: "string", default: "9200" } } });
const port = Number(values.port);
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  console.error(`tool-server: --port must be 0..65535, not ${values.port}`);
  process.exit(2);
}
let server: Awaited<ReturnType<typeof startMcpSdk>>;
try {
  server = await startMcpSdk({
    clientSecret: CLIENT_SECRET,
    refreshToken: REFRESH_TOKEN,
    revokedRefreshToken: "local-refresh-token-revoked",
    port,
  });
} catch (e) {
  console.error(`tool-server: cannot listen on 127.0.0.1:${port} (${e instanceof Error ? e.message : e})`);
  process.exit(1);
}
console.log(`tool server on ${server.url} (tools: forecast, bad-shape, trace, expire-token)
  MCP, no auth:          ${server.url}/mcp
  MCP, OAuth:            ${server.url}/oauth/mcp
  authorization server:  ${server.url}/as
  client_id:             ${OAUTH_CLIENT_ID}
  client_secret:         ${CLIENT_SECRET}
  refresh_token:         ${REFRESH_TOKEN}`);
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.on(signal, () => {
    server.close().then(() => process.exit(0));
  });
}
