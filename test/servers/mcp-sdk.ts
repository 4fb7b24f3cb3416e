/**
 * A tool server built on the maintained SDK (`@modelcontextprotocol/server` 2.4.0, its
 * `createMcpHandler`: the stateless 2026-07-28 revision and 2025-era requests), served with
 * `@modelcontextprotocol/express` on 127.0.0.1, beside an OAuth-protected copy of it and an
 * authorization server of the test's own:
 *
 * - `/mcp`: no auth.
 * - `/oauth/mcp`: `requireBearerAuth` (tokens this file's authorization server issued for this
 *   resource, not expired or revoked), Protected Resource Metadata (RFC 9728) from
 *   `mcpAuthMetadataRouter` at `/.well-known/oauth-protected-resource/oauth/mcp`.
 * - `/as`: the authorization server: RFC 8414 metadata at `/.well-known/oauth-authorization-server/as`,
 *   a token endpoint for `client_credentials` and `refresh_token` (client `workflow-edge-tests`,
 *   HTTP Basic), which requires the RFC 8707 `resource` of `/oauth/mcp` and refuses the revoked
 *   refresh token with `invalid_grant`. It rotates refresh tokens.
 *
 * Tools: `forecast {city}` declares an `outputSchema` and answers `structuredContent`; `bad-shape`
 * declares one its answer does not match;
 * `trace` answers the `_meta.traceparent` its call carried; `expire-token` revokes the token the
 * call came with (the next request is refused 401: a token that expires mid-run).
 * `GET /__log` lists `{path, method, version, authorized}` per MCP request and the tokens issued
 * (for the leak tests); `POST /__reset` empties it. `npm run tool-server` serves it for trying a
 * tool server with OAuth by hand (scripts/tool-server.ts; docs/agents-and-tools.md, "OAuth").
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Readable } from "node:stream";
import {
  createMcpExpressApp,
  getOAuthProtectedResourceMetadataUrl,
  mcpAuthMetadataRouter,
  requireBearerAuth,
} from "@modelcontextprotocol/express";
import {
  createMcpHandler,
  fromJsonSchema,
  McpServer,
  OAuthError,
  OAuthErrorCode,
} from "@modelcontextprotocol/server";
import express from "express";

export const OAUTH_CLIENT_ID = "workflow-edge-tests";

export interface SdkServerLog {
  requests: Array<{ path: string; method: string; version: string | null; authorized: boolean }>;
  /** Every access and refresh token issued, and each grant asked for. */
  issued: string[];
  grants: Array<{ grant_type: string; resource: string | null; scope: string | null; ok: boolean }>;
}

interface Grant {
  clientId: string;
  scopes: string[];
  resource: string;
  revoked: boolean;
}

export async function startMcpSdk(opts: {
  clientSecret: string;
  refreshToken: string;
  revokedRefreshToken: string;
  /** Default 0: any free port. */
  port?: number;
}): Promise<{ url: string; log(): SdkServerLog; close(): Promise<void> }> {
  const log: SdkServerLog = { requests: [], issued: [], grants: [] };
  const tokens = new Map<string, Grant>();
  const refreshTokens = new Map<string, Grant>();

  const tools = () => {
    const server = new McpServer({ name: "sdk-test-tools", version: "2.4.0" });
    server.registerTool(
      "forecast",
      {
        description: "Tomorrow's forecast for a city",
        inputSchema: fromJsonSchema({
          type: "object",
          properties: { city: { type: "string" } },
          required: ["city"],
        }),
        outputSchema: fromJsonSchema({
          type: "object",
          properties: { city: { type: "string" }, high_c: { type: "number" } },
          required: ["city", "high_c"],
        }),
      },
      async (args: unknown) => {
        const city = String((args as { city?: unknown }).city ?? "");
        const out = { city, high_c: city.length + 10 };
        return {
          content: [{ type: "text" as const, text: `${city}: ${out.high_c} °C` }],
          structuredContent: out,
        };
      },
    );
    // A server that breaks its own promise: the schema is published, the SDK's own output check is
    // switched off (a validator that passes everything), and the answer does not match it.
    const unchecked = {
      getValidator: () => (input: unknown) => ({
        valid: true as const,
        data: input,
        errorMessage: undefined,
      }),
    };
    server.registerTool(
      "bad-shape",
      {
        description: "Declares an outputSchema its structuredContent does not match",
        outputSchema: fromJsonSchema(
          { type: "object", properties: { high_c: { type: "number" } }, required: ["high_c"] },
          unchecked as never,
        ),
      },
      async () => ({
        content: [{ type: "text" as const, text: "warm" }],
        structuredContent: { high_c: "warm" },
      }),
    );
    server.registerTool(
      "trace",
      { description: "Answers the traceparent its call carried in _meta" },
      async (ctx: unknown) => {
        const meta = (ctx as { mcpReq?: { _meta?: Record<string, unknown> } }).mcpReq?._meta ?? {};
        return { content: [{ type: "text" as const, text: String(meta.traceparent ?? "none") }] };
      },
    );
    server.registerTool(
      "expire-token",
      { description: "Revokes the token this call came with" },
      async (ctx: unknown) => {
        const token = (ctx as { http?: { authInfo?: { token?: string } } }).http?.authInfo?.token;
        const grant = token ? tokens.get(token) : undefined;
        if (grant) grant.revoked = true;
        return { content: [{ type: "text" as const, text: grant ? "expired" : "no token" }] };
      },
    );
    return server;
  };
  const handler = createMcpHandler(tools);

  const app = createMcpExpressApp({ host: "127.0.0.1" });
  app.use(express.urlencoded({ extended: false }));
  const server: Server = createServer(app);
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port ?? 0, "127.0.0.1", resolve);
  });
  const { port } = server.address() as AddressInfo;
  const base = `http://127.0.0.1:${port}`;
  const resource = new URL(`${base}/oauth/mcp`);
  const issuer = `${base}/as`;

  // ---- the authorization server -------------------------------------------------------------
  const asMetadata = {
    issuer,
    authorization_endpoint: `${issuer}/authorize`,
    token_endpoint: `${issuer}/token`,
    grant_types_supported: ["client_credentials", "refresh_token"],
    token_endpoint_auth_methods_supported: ["client_secret_basic"],
    response_types_supported: ["code"],
  };
  app.get("/.well-known/oauth-authorization-server/as", (_req, res) => {
    res.json(asMetadata);
  });
  app.post("/as/token", (req, res) => {
    const body = req.body as Record<string, string | undefined>;
    const [id, secret] = Buffer.from((req.headers.authorization ?? "").replace(/^Basic /, ""), "base64")
      .toString()
      .split(":")
      .map(decodeURIComponent);
    const refuse = (error: string, status = 400) => {
      log.grants.push({
        grant_type: String(body.grant_type),
        resource: body.resource ?? null,
        scope: body.scope ?? null,
        ok: false,
      });
      res.status(status).json({ error });
    };
    if (id !== OAUTH_CLIENT_ID || secret !== opts.clientSecret) return refuse("invalid_client", 401);
    if (body.resource !== resource.href) return refuse("invalid_target");
    let grant: Grant;
    if (body.grant_type === "client_credentials") {
      grant = {
        clientId: id,
        scopes: (body.scope ?? "").split(" ").filter(Boolean),
        resource: resource.href,
        revoked: false,
      };
    } else if (body.grant_type === "refresh_token") {
      const known =
        body.refresh_token === opts.refreshToken ? undefined : refreshTokens.get(body.refresh_token ?? "");
      if (
        body.refresh_token === opts.revokedRefreshToken ||
        (body.refresh_token !== opts.refreshToken && !known)
      ) {
        return refuse("invalid_grant");
      }
      if (known) refreshTokens.delete(body.refresh_token ?? "");
      grant = { clientId: id, scopes: [], resource: resource.href, revoked: false };
    } else {
      return refuse("unsupported_grant_type");
    }
    const access = `at-${crypto.randomUUID()}`;
    tokens.set(access, grant);
    log.issued.push(access);
    const answer: Record<string, unknown> = { access_token: access, token_type: "Bearer", expires_in: 3600 };
    if (body.grant_type === "refresh_token") {
      const next = `rt-${crypto.randomUUID()}`;
      refreshTokens.set(next, grant);
      log.issued.push(next);
      answer.refresh_token = next;
    }
    log.grants.push({
      grant_type: body.grant_type,
      resource: body.resource ?? null,
      scope: body.scope ?? null,
      ok: true,
    });
    res.json(answer);
  });

  // ---- the resource server -------------------------------------------------------------------
  app.use(
    mcpAuthMetadataRouter({
      oauthMetadata: asMetadata,
      resourceServerUrl: resource,
      scopesSupported: ["tools"],
      resourceName: "SDK test tools (OAuth)",
    }),
  );
  const bearer = requireBearerAuth({
    verifier: {
      async verifyAccessToken(token: string) {
        const grant = tokens.get(token);
        if (!grant || grant.revoked)
          throw new OAuthError(OAuthErrorCode.InvalidToken, "the token is not valid");
        return {
          token,
          clientId: grant.clientId,
          scopes: grant.scopes,
          resource: new URL(grant.resource),
          expiresAt: Math.floor(Date.now() / 1000) + 3600,
        };
      },
    },
    resourceMetadataUrl: getOAuthProtectedResourceMetadataUrl(resource),
    expectedResource: resource,
  });

  const serve = async (req: express.Request, res: express.Response) => {
    const method = String((req.body as { method?: unknown } | undefined)?.method ?? req.method);
    log.requests.push({
      path: req.path,
      method,
      version: (req.headers["mcp-protocol-version"] as string | undefined) ?? null,
      authorized: req.auth !== undefined,
    });
    const headers = new Headers();
    for (const [k, v] of Object.entries(req.headers)) if (typeof v === "string") headers.set(k, v);
    const request = new Request(`${base}${req.originalUrl}`, {
      method: req.method,
      headers,
      body: req.method === "POST" ? JSON.stringify(req.body) : undefined,
    });
    const answer = await handler.fetch(request, { authInfo: req.auth, parsedBody: req.body });
    res.status(answer.status);
    answer.headers.forEach((v, k) => {
      res.setHeader(k, v);
    });
    if (answer.body) Readable.fromWeb(answer.body as import("node:stream/web").ReadableStream).pipe(res);
    else res.end();
  };
  app.all("/mcp", serve);
  app.all("/oauth/mcp", bearer, serve);
  app.get("/__log", (_req, res) => {
    res.json(log);
  });
  app.post("/__reset", (_req, res) => {
    log.requests.length = 0;
    log.grants.length = 0;
    res.json({});
  });

  return {
    url: base,
    log: () => log,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
