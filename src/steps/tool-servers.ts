/**
 * How an agent step reaches its tool servers and how their tools are offered to a model: each
 * server's rendered connection (its URL, auth header and params, secrets inside and never
 * recorded), the run-time refusal to send a secret to a host the caller picks, and the names and
 * parameter schemas providers accept.
 */
import type { CompiledServerRef, Json, JsonObject, Template } from "../bundle.ts";
import { isPrivateHost } from "../engine/net.ts";
import { render, stringify } from "../engine/substitute.ts";
import { type OAuthGrant, type StepContext, StepError, type ToolServerTarget } from "../engine/types.ts";

/** The rendered connection of one server ref: url, auth header, params (secrets inside, never recorded). */
export function serverTarget(ref: CompiledServerRef, agentParams: Json, path: string): ToolServerTarget {
  const scope = { params: agentParams, env: {}, step: {} };
  const values: JsonObject = {};
  for (const [name, decl] of Object.entries(ref.server.params)) {
    const given = ref.params[name];
    if (given !== undefined) values[name] = render(given, scope);
    else if (decl.default !== undefined) values[name] = decl.default;
  }
  const own = { params: values, env: {}, step: {} };
  const headers: Record<string, string> = {};
  const auth = ref.server.auth;
  const text = (t: Template | null) => (t === null ? null : stringify(render(t, own)));
  let oauth: OAuthGrant | undefined;
  if (auth?.scheme === "oauth") {
    oauth = {
      clientId: text(auth.clientId) ?? "",
      clientSecret: text(auth.clientSecret),
      refreshToken: text(auth.refreshToken),
      scopes: auth.scopes,
    };
  } else if (auth) {
    const secret = stringify(render(auth.secret, own));
    headers[auth.header] = auth.scheme === "bearer" ? `Bearer ${secret}` : secret;
  }
  return {
    path,
    server: ref.name,
    url: stringify(render(ref.server.url, own)),
    headers,
    ...(oauth ? { oauth } : {}),
    config: values,
    timeoutMs: ref.server.timeoutS * 1000,
  };
}

/**
 * The run-time half of the build's tool-server host warning: a server whose url host the caller
 * picks (directly, or through the inputs of the workflow steps that run this one) is not sent a
 * secret, neither in its auth header nor in its params, unless its host is private and private
 * hosts are allowed (local development). The step fails `tool_failed` before any request.
 */
export function refuseSecretToCallerHost(
  server: string,
  target: ToolServerTarget,
  guarded: readonly string[],
  ctx: StepContext,
): void {
  if (
    !guarded.includes(server) ||
    !ctx.holdsSecret?.(JSON.stringify([target.headers, target.config, target.oauth ?? null]))
  )
    return;
  let host = "";
  try {
    host = new URL(target.url).hostname;
  } catch {
    return; // not a URL: the tool host refuses it with its own message
  }
  if (isPrivateHost(host) && ctx.env.ALLOW_PRIVATE_WEBHOOKS === "true") return;
  throw new StepError(
    "tool_failed",
    `refusing to send a secret to tool server \`${server}\`: its url host (${host}) comes from the caller; take the host from a literal or an env var`,
  );
}

/** What OpenAI and Anthropic accept as a tool name; MCP names may also hold `.` or `/`, or be longer. */
const PROVIDER_TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * The names tools are offered under: their own when providers accept them (the usual case), else
 * with every other character written `_`, cut to 64 and made unique among the step's names.
 * Calls map back through the offered name, so a server still gets its tool's own name.
 */
export function providerToolNames(names: string[]): string[] {
  const taken = new Set(names.filter((n) => PROVIDER_TOOL_NAME.test(n)));
  return names.map((name) => {
    if (PROVIDER_TOOL_NAME.test(name)) return name;
    const base = name.replace(/[^A-Za-z0-9_-]/g, "_").slice(0, 64) || "tool";
    let offered = base;
    for (let n = 2; taken.has(offered); n++) offered = `${base.slice(0, 63 - String(n).length)}_${n}`;
    taken.add(offered);
    return offered;
  });
}

export function toolParameters(schema: JsonObject): JsonObject {
  // `$schema` (MCP servers often send draft-07's) is not part of what providers accept.
  const { $schema: _dialect, ...rest } = schema;
  return rest.type === undefined ? { type: "object", ...rest } : rest;
}
