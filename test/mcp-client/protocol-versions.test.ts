/**
 * Which protocol revision the MCP client speaks with each kind of server it meets
 * (docs/agents-and-tools.md, "Protocol versions"), against real servers on 127.0.0.1: a server
 * built on `@modelcontextprotocol/server` 2.4.0, the registry's `server-everything` (v1 SDK), our
 * logging server over Streamable HTTP and over HTTP+SSE. What worked is kept per server for the
 * isolate's life: a second connection asks nothing it asked before.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { connectMcp, forgetServers } from "../../src/mcp-client/client.ts";
import { TEST_SECRETS } from "../fixtures/secrets.ts";
import { startMcpSdk } from "../servers/mcp-sdk.ts";
import { startMcpTools } from "../servers/mcp-tools.ts";
import { startServerEverything } from "../servers/server-everything.ts";

let sdk: Awaited<ReturnType<typeof startMcpSdk>>;
let everything: Awaited<ReturnType<typeof startServerEverything>>;
let tools: Awaited<ReturnType<typeof startMcpTools>>;

beforeAll(async () => {
  sdk = await startMcpSdk({
    clientSecret: TEST_SECRETS.OAUTH_CLIENT_SECRET as string,
    refreshToken: TEST_SECRETS.OAUTH_REFRESH_TOKEN as string,
    revokedRefreshToken: TEST_SECRETS.OAUTH_REFRESH_REVOKED as string,
  });
  everything = await startServerEverything();
  tools = await startMcpTools();
}, 60_000);

afterAll(async () => {
  await sdk.close();
  await everything.close();
  await tools.close();
});

beforeEach(() => forgetServers());

const connect = (url: string) =>
  connectMcp(
    { url, headers: {}, fetch: (i, init) => fetch(i, init), timeoutMs: 10_000 },
    new AbortController().signal,
  );

describe("protocol revisions spoken", () => {
  it("speaks 2026-07-28 (stateless) with a server built on the SDK v2", async () => {
    const session = await connect(`${sdk.url}/mcp`);
    expect(session.version).toBe("2026-07-28");
    expect((await session.listTools(new AbortController().signal)).map((t) => t.name)).toContain("forecast");
  });

  it("speaks 2025-11-25 with server-everything (v1 SDK): it does not answer server/discover", async () => {
    const session = await connect(everything.url);
    expect(session.version).toBe("2025-11-25");
    expect(session.transport).toBe("streamable-http");
    await session.close();
  });

  it("speaks 2024-11-05 over HTTP+SSE with a server that refuses POST", async () => {
    const session = await connect(`http://127.0.0.1:${tools.port}/sse/versions`);
    expect(session.version).toBe("2024-11-05");
    expect(session.transport).toBe("sse");
    await session.close();
  });

  it("keeps what worked per server: a second connection asks no server/discover", async () => {
    const before = sdk.log().requests.filter((r) => r.method === "server/discover").length;
    await connect(`${sdk.url}/mcp`);
    await connect(`${sdk.url}/mcp`);
    expect(sdk.log().requests.filter((r) => r.method === "server/discover").length).toBe(before + 1);

    const legacy = `http://127.0.0.1:${tools.port}/sse/kept`;
    await (await connect(legacy)).close();
    await (await connect(legacy)).close();
    const log = (await (await fetch(`http://127.0.0.1:${tools.port}/__log/kept`)).json()) as Array<{
      method: string;
    }>;
    expect(log.filter((l) => l.method === "POST (refused)")).toHaveLength(1);
  });
});
