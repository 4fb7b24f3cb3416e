/**
 * Remote tool servers as they are deployed in 2026 (docs/agents-and-tools.md, "Protocol versions"
 * and "OAuth"), against real servers on 127.0.0.1: one built on `@modelcontextprotocol/server`
 * 2.4.0 (the stateless 2026-07-28 revision) and its OAuth-protected copy behind
 * `@modelcontextprotocol/express`'s `requireBearerAuth` and `mcpAuthMetadataRouter`, with an
 * authorization server of the test's own (test/servers/mcp-sdk.ts); our logging server's HTTP+SSE
 * transport (2024-11-05). An agent's tools answer through each; OAuth tokens are asked for with
 * the RFC 8707 resource, renewed once when the server refuses one, and never stored, logged or
 * exported.
 */

import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { SdkServerLog } from "../servers/mcp-sdk.ts";
import { poll } from "../support/poll.ts";
import { type Envelope, run, uniqueKey } from "../worker/harness.ts";
import { script, TOOLS_URL } from "../worker/tools-support.ts";

const vars = env as unknown as Record<string, string>;
const SDK = vars.MCP_SDK_URL as string;
const COLLECTOR = vars.OTEL_EXPORTER_OTLP_ENDPOINT as string;

async function sdkLog(): Promise<SdkServerLog> {
  return (await (await fetch(`${SDK}/__log`)).json()) as SdkServerLog;
}

/** A run of `tools-oauth` with the given script; the log entries it added to the SDK server's. */
async function oauthRun(steps: Parameters<typeof script>[0], extra: Record<string, unknown> = {}) {
  const before = await sdkLog();
  const traceId = crypto.randomUUID().replace(/-/g, "");
  const e: Envelope = await run(
    "tools-oauth",
    // A URL of its own (the query is not part of the resource): a token cached by another test
    // of this isolate is not this run's.
    { script: script(steps), mcp_url: `${SDK}/oauth/mcp?run=${uniqueKey("o")}`, ...extra },
    { headers: { traceparent: `00-${traceId}-00f067aa0ba902b7-01` } },
  );
  const after = await sdkLog();
  return {
    e,
    traceId,
    grants: after.grants.slice(before.grants.length),
    requests: after.requests.slice(before.requests.length),
    issued: after.issued.slice(before.issued.length),
  };
}

afterEach(() => vi.restoreAllMocks());

describe("protocol revisions", () => {
  it("speaks the stateless 2026-07-28 revision with a server built on the SDK: no initialize, no session", async () => {
    const before = (await sdkLog()).requests.length;
    const e = await run("tools-open", {
      script: script([[{ name: "forecast", arguments: { city: "Oslo" } }], "$results"]),
      mcp_url: `${SDK}/mcp`,
    });
    expect(e.status).toBe("complete");
    const requests = (await sdkLog()).requests.slice(before).filter((r) => r.path === "/mcp");
    expect(requests.map((r) => r.method)).toEqual(expect.arrayContaining(["tools/list", "tools/call"]));
    expect(requests.map((r) => r.method)).not.toContain("initialize");
    for (const r of requests) expect(r.version).toBe("2026-07-28");
  });

  it("gives the agent a tool's structuredContent when the tool declares an outputSchema", async () => {
    const e = await run("tools-open", {
      script: script([[{ name: "forecast", arguments: { city: "Lima" } }], "$results"]),
      mcp_url: `${SDK}/mcp`,
    });
    expect(e.output).toEqual({ results: ['{"city":"Lima","high_c":14}'] });
  });

  it("tells the model when structuredContent does not match the tool's outputSchema", async () => {
    const e = await run("tools-open", {
      script: script([[{ name: "bad-shape" }], "$results"]),
      mcp_url: `${SDK}/mcp`,
    });
    expect(e.status).toBe("complete");
    expect(e.output.results[0]).toMatch(
      /The tool's structuredContent does not match its outputSchema: .*high_c/,
    );
  });

  it("sends the run's traceparent in _meta as well as the header", async () => {
    const traceId = crypto.randomUUID().replace(/-/g, "");
    const e = await run(
      "tools-open",
      { script: script([[{ name: "trace" }], "$results"]), mcp_url: `${SDK}/mcp` },
      { headers: { traceparent: `00-${traceId}-00f067aa0ba902b7-01` } },
    );
    expect(e.output.results[0]).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));
  });

  it("falls back to HTTP+SSE (2024-11-05) for a server that refuses POST", async () => {
    const key = uniqueKey("legacy");
    const e = await run("tools-open", {
      script: script([[{ name: "echo", arguments: { message: "old" } }], "$results"]),
      mcp_url: `${TOOLS_URL}/sse/${key}`,
    });
    expect(e.output).toEqual({ results: ["Echo: old"] });
  });
});

describe("OAuth", () => {
  it("gets a client-credentials token for the server's resource on its 401, and uses it", async () => {
    const { e, grants, requests } = await oauthRun([
      [{ name: "cc__forecast", arguments: { city: "Rome" } }],
      "$results",
    ]);
    expect(e.status).toBe("complete");
    expect(e.output).toEqual({ results: ['{"city":"Rome","high_c":14}'] });
    const cc = grants.filter((g) => g.grant_type === "client_credentials");
    expect(cc[0]).toEqual({
      grant_type: "client_credentials",
      resource: `${SDK}/oauth/mcp`,
      scope: "tools",
      ok: true,
    });
    expect(requests.some((r) => r.method === "tools/call" && r.authorized)).toBe(true);
  });

  it("refreshes a refresh token for the server, keeping the rotated one", async () => {
    const { e, grants } = await oauthRun([
      [{ name: "rt__forecast", arguments: { city: "Kyiv" } }],
      "$results",
    ]);
    expect(e.output).toEqual({ results: ['{"city":"Kyiv","high_c":14}'] });
    expect(
      grants.some((g) => g.grant_type === "refresh_token" && g.ok && g.resource === `${SDK}/oauth/mcp`),
    ).toBe(true);
  });

  it("asks for a new token once when the server refuses the one it holds mid-run", async () => {
    const { e, grants } = await oauthRun([
      [{ name: "cc__expire-token" }],
      [{ name: "cc__forecast", arguments: { city: "Bern" } }],
      "$results",
    ]);
    expect(e.status).toBe("complete");
    expect(e.output).toEqual({ results: ["expired", '{"city":"Bern","high_c":14}'] });
    expect(grants.filter((g) => g.grant_type === "client_credentials" && g.ok).length).toBeGreaterThanOrEqual(
      1,
    );
  });

  it("fails the step tool_auth_failed when the authorization server refuses the grant", async () => {
    const { e } = await oauthRun([[{ name: "rt__forecast", arguments: { city: "Oslo" } }], "$results"], {
      revoked: true,
    });
    expect(e.status).toBe("failed");
    expect(e.error.code).toBe("tool_auth_failed");
    expect(e.error.message).toMatch(/refused the grant: invalid_grant/);
  });

  it("never keeps a token in the run's storage, a log line or an exported span", async () => {
    const lines: string[] = [];
    for (const level of ["log", "warn", "error"] as const) {
      vi.spyOn(console, level).mockImplementation((...args: unknown[]) => {
        lines.push(args.map(String).join(" "));
      });
    }
    const { e, issued, traceId } = await oauthRun([
      [{ name: "cc__forecast", arguments: { city: "Riga" } }],
      [{ name: "rt__forecast", arguments: { city: "Riga" } }],
      "$results",
    ]);
    expect(e.status).toBe("complete");
    expect(issued.length).toBeGreaterThan(0);
    const stub = env.RUNS.get(env.RUNS.idFromString(e.run_id));
    const stored = await runInDurableObject(stub, (_o, state) =>
      JSON.stringify([...state.storage.kv.list()]),
    );
    const spans = await poll(
      "the run's root span at the collector",
      async () => JSON.stringify(await (await fetch(`${COLLECTOR}/traces/${traceId}`)).json()),
      (text) => text.includes("workflow tools-oauth"),
      { intervalMs: 100 },
    );
    for (const token of issued) {
      expect(stored).not.toContain(token);
      expect(spans).not.toContain(token);
      for (const line of lines) expect(line).not.toContain(token);
    }
    for (const secret of [vars.OAUTH_CLIENT_SECRET, vars.OAUTH_REFRESH_TOKEN] as string[]) {
      expect(stored).not.toContain(secret);
      expect(spans).not.toContain(secret);
    }
  });
});
