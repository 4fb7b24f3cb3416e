/**
 * OAuth for tool servers (docs/agents-and-tools.md, "OAuth"): a server file's `auth: {scheme:
 * oauth, …}` is a client-credentials grant or a refresh token a person approved once. The MCP
 * client's requests go through `oauthFetch`, which adds the bearer token and, on the server's 401,
 * does what MCP's authorization spec asks: read the Protected Resource Metadata the challenge's
 * `resource_metadata` names (RFC 9728; the well-known URL without one), the authorization server's
 * metadata (RFC 8414), ask its token endpoint with the `resource` parameter (RFC 8707), and send
 * the request once more. The protocol work is oauth4webapi's (a maintained client).
 *
 * Tokens live in this isolate's memory only, until they expire: never in a run's record, a log
 * line, a span or an error (errors name an endpoint and an OAuth error code, nothing else). A
 * token the server refuses is dropped and a new one asked for once. A grant the authorization
 * server refuses fails the step `tool_auth_failed`. Metadata and token endpoints must be https,
 * except with ALLOW_PRIVATE_WEBHOOKS=true (local development and tests), which also allows plain
 * http on loopback addresses.
 */
import * as oauth from "oauth4webapi";
import { sha256Hex } from "../common/sha256.ts";
import { checkOutboundUrl } from "../engine/net.ts";
import { type OAuthGrant, StepError } from "../engine/types.ts";
import { describe, type FetchLike, McpError } from "./channel.ts";

interface Token {
  accessToken: string;
  /** Epoch ms; Infinity when the server gave no `expires_in`. */
  expiresAt: number;
}

/** Tokens by grant and resource, for the isolate's life (never stored). */
const tokens = new Map<string, Token>();
/** A refresh token the authorization server rotated, by the one the server file gave. */
const rotated = new Map<string, string>();
/** Expire a token this long before its `expires_in` says, so a request in flight does not carry a dead one. */
const EXPIRY_SKEW_MS = 10_000;

/** Forgets every token (tests). */
export function forgetTokens(): void {
  tokens.clear();
  rotated.clear();
}

/** `resource_metadata` of a `WWW-Authenticate: Bearer …` challenge, if any. */
export function resourceMetadataOf(header: string | null): string | null {
  if (!header) return null;
  const m =
    /resource_metadata\s*=\s*"([^"]*)"/i.exec(header) ?? /resource_metadata\s*=\s*([^\s,]+)/i.exec(header);
  return m?.[1] ?? null;
}

/** Whether `url` is an endpoint the OAuth exchange may use; its plain-http allowance. */
function endpoint(url: string, allowPrivate: boolean, what: string): URL {
  const checked = checkOutboundUrl(url, allowPrivate);
  if (!(checked instanceof URL)) throw authFailed(`${what} ${describe(url)} cannot be used`);
  if (checked.protocol !== "https:" && !(allowPrivate && isLoopback(checked.hostname))) {
    throw authFailed(`${what} ${describe(url)} must be https`);
  }
  return checked;
}

function isLoopback(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, "");
  return h === "localhost" || h === "::1" || /^127\./.test(h);
}

function authFailed(message: string): StepError {
  return new StepError("tool_auth_failed", `OAuth: ${message}`);
}

/**
 * A `fetch` for the MCP client that carries `grant`'s token to the server at `serverUrl`: it adds
 * the token it holds, and on a 401 gets one (a new one when it held one) and sends again once.
 */
export function oauthFetch(
  base: FetchLike,
  serverUrl: string,
  grant: OAuthGrant,
  allowPrivate: boolean,
): FetchLike {
  let cacheKey: string | null = null;
  const send = (input: string | Request, init: RequestInit | undefined, token: string | null) => {
    const headers = new Headers(init?.headers);
    if (token !== null) headers.set("authorization", `Bearer ${token}`);
    return base(input, { ...init, headers });
  };
  return async (input, init) => {
    cacheKey ??= await keyOf(serverUrl, grant);
    const held = tokens.get(cacheKey);
    const fresh = held && held.expiresAt > Date.now() ? held : null;
    const res = await send(input, init, fresh?.accessToken ?? null);
    if (res.status !== 401) return res;
    const challenge = res.headers.get("www-authenticate");
    res.body?.cancel().catch(() => {});
    tokens.delete(cacheKey);
    const token = await obtainToken(base, serverUrl, resourceMetadataOf(challenge), grant, allowPrivate);
    tokens.set(cacheKey, token);
    const again = await send(input, init, token.accessToken);
    if (again.status === 401) {
      again.body?.cancel().catch(() => {});
      tokens.delete(cacheKey);
      throw authFailed(`${describe(serverUrl)} refused the token its authorization server gave`);
    }
    return again;
  };
}

async function keyOf(serverUrl: string, grant: OAuthGrant): Promise<string> {
  const secret = grant.refreshToken ?? grant.clientSecret ?? "";
  return `${serverUrl}\n${grant.clientId}\n${grant.scopes.join(" ")}\n${await sha256Hex(secret)}`;
}

/** The Protected Resource Metadata, the authorization server's metadata, then a token. */
async function obtainToken(
  fetch: FetchLike,
  serverUrl: string,
  metadataUrl: string | null,
  grant: OAuthGrant,
  allowPrivate: boolean,
): Promise<Token> {
  const options = (url: URL) => ({
    [oauth.customFetch]: (u: string, init: RequestInit) => fetch(u, { ...init, redirect: "manual" }),
    [oauth.allowInsecureRequests]: url.protocol === "http:",
  });
  try {
    // RFC 9728: the resource's metadata names its authorization servers and its `resource` id
    // (the server's URL without its query or fragment).
    const resourceUrl = new URL(serverUrl);
    resourceUrl.search = "";
    resourceUrl.hash = "";
    let prmResponse: Response;
    if (metadataUrl !== null) {
      const at = endpoint(new URL(metadataUrl, serverUrl).href, allowPrivate, "the resource metadata");
      prmResponse = await fetch(at.href, { headers: { accept: "application/json" }, redirect: "manual" });
    } else {
      endpoint(serverUrl, allowPrivate, "the resource");
      prmResponse = await oauth.resourceDiscoveryRequest(resourceUrl, options(resourceUrl));
    }
    const resource = await oauth
      .processResourceDiscoveryResponse(resourceUrl, prmResponse)
      .catch(async () => {
        // Servers that put their metadata's `resource` at the origin (a common deployment) are read as such.
        return oauth.processResourceDiscoveryResponse(new URL(resourceUrl.origin), prmResponse.clone());
      });
    const issuerText = resource.authorization_servers?.[0];
    if (!issuerText) throw authFailed(`${describe(serverUrl)} names no authorization server`);
    const issuer = endpoint(issuerText, allowPrivate, "the authorization server");
    // RFC 8414: where the token endpoint is.
    const as = await oauth.processDiscoveryResponse(
      issuer,
      await oauth.discoveryRequest(issuer, { algorithm: "oauth2", ...options(issuer) }),
    );
    if (!as.token_endpoint) throw authFailed(`${describe(issuer.href)} has no token endpoint`);
    const tokenEndpoint = endpoint(as.token_endpoint, allowPrivate, "the token endpoint");
    const client: oauth.Client = { client_id: grant.clientId };
    const methods = as.token_endpoint_auth_methods_supported;
    const clientAuth =
      grant.clientSecret === null
        ? oauth.None()
        : methods && !methods.includes("client_secret_basic") && methods.includes("client_secret_post")
          ? oauth.ClientSecretPost(grant.clientSecret)
          : oauth.ClientSecretBasic(grant.clientSecret);
    // RFC 8707: the token is for this resource only.
    const extra: Record<string, string> = { resource: resource.resource };
    if (grant.scopes.length > 0) extra.scope = grant.scopes.join(" ");
    const requestOptions = options(tokenEndpoint);
    let answer: oauth.TokenEndpointResponse;
    if (grant.refreshToken !== null) {
      const current = rotated.get(grant.refreshToken) ?? grant.refreshToken;
      answer = await oauth.processRefreshTokenResponse(
        as,
        client,
        await oauth.refreshTokenGrantRequest(as, client, clientAuth, current, {
          ...requestOptions,
          additionalParameters: extra,
        }),
      );
      if (answer.refresh_token) rotated.set(grant.refreshToken, answer.refresh_token);
    } else {
      answer = await oauth.processClientCredentialsResponse(
        as,
        client,
        await oauth.clientCredentialsGrantRequest(as, client, clientAuth, extra, requestOptions),
      );
    }
    const ttl = typeof answer.expires_in === "number" ? answer.expires_in * 1000 - EXPIRY_SKEW_MS : Infinity;
    return { accessToken: answer.access_token, expiresAt: Date.now() + Math.max(0, ttl) };
  } catch (e) {
    throw describeFailure(e);
  }
}

/** An error that says what failed and the OAuth error code, never a token or a secret. */
function describeFailure(e: unknown): Error {
  if (e instanceof StepError) return e;
  if (e instanceof oauth.ResponseBodyError) {
    return authFailed(`the authorization server refused the grant: ${e.error}`);
  }
  if (e instanceof oauth.WWWAuthenticateChallengeError) {
    return authFailed("the authorization server refused the client's credentials");
  }
  if (e instanceof oauth.OperationProcessingError || e instanceof oauth.UnsupportedOperationError) {
    // oauth4webapi's own messages say which check failed (an issuer or resource mismatch, a status).
    return authFailed(e.message.slice(0, 200));
  }
  if (e instanceof McpError) return authFailed(e.message);
  return authFailed(`the exchange failed: ${e instanceof Error ? e.name : "error"}`);
}
