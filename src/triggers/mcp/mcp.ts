/**
 * The MCP server (docs/protocols.md, "MCP server"): `POST /mcp` serves every workflow that declares
 * `invoke.mcp` as a tool, over Streamable HTTP without sessions (no `Mcp-Session-Id`; `GET /mcp` is
 * 405). Revisions 2025-11-25 (offered), 2025-06-18 and 2025-03-26 through `initialize`, and the
 * stateless 2026-07-28 exchange (`server/discover`, the version in each request's `_meta`). The
 * caller's credential decides which tools it sees and may call (mcp-tools.ts); a tool call is a run
 * of the workflow, also as a task (mcp-tasks.ts). Errors are JSON-RPC's, never problem+json, except
 * the 401 that asks for a credential before any JSON-RPC.
 */
import type { CompiledWorkflow, Json, JsonObject } from "../../bundle.ts";
import { HttpProblem } from "../../common/problem.ts";
import type { Deployed } from "../../run/start/reruns.ts";
import { BEARER_CHALLENGE, callerOpens } from "../credentials.ts";
import {
  INTERNAL_ERROR,
  INVALID_REQUEST,
  METHOD_NOT_FOUND,
  RpcError,
  type RpcRequest,
  readRpc,
  rpcError,
  rpcResponse,
  rpcResult,
} from "../json-rpc.ts";
import { dressed, type McpContext, SERVER_INFO } from "./mcp-context.ts";
import { cancelTask, getTask, listTasks, taskResult } from "./mcp-tasks.ts";
import { callTool, toolsOf } from "./mcp-tools.ts";

/** The revisions `initialize` accepts, newest first (the first is offered to any other). */
export const LEGACY_VERSIONS = ["2025-11-25", "2025-06-18", "2025-03-26"] as const;
/** The stateless revision: no `initialize`, the version and capabilities in every request's `_meta`. */
export const STATELESS_VERSION = "2026-07-28";
const VERSION_META = "io.modelcontextprotocol/protocolVersion";
/** Clients may cache `server/discover` this long. */
const DISCOVER_TTL_MS = 3_600_000;

/** `POST /mcp`. */
export async function mcpEndpoint(
  served: Deployed,
  env: Env,
  req: Request,
  carry?: (work: Promise<void>) => void,
): Promise<Response> {
  const raw = env as unknown as Record<string, unknown>;
  const refused = refusedOrigin(req, raw);
  if (refused) return refused;
  const header = req.headers.get("mcp-protocol-version");
  if (
    header !== null &&
    header !== STATELESS_VERSION &&
    !(LEGACY_VERSIONS as readonly string[]).includes(header)
  ) {
    return rpcResponse(rpcError(null, unsupported(header)), 400);
  }
  // Who may call what: the workflows served as tools whose credentials this request holds.
  const served_ = Object.keys(served.bundle.invocable)
    .map((name) => served.lookup(name))
    .filter((f): f is { key: string; wf: CompiledWorkflow } => f?.wf.mcp != null);
  const opened = (
    await Promise.all(served_.map(async (f) => ((await callerOpens(f.wf.auth, req.headers, raw)) ? f : null)))
  ).filter((f) => f !== null);
  if (opened.length === 0) {
    return new HttpProblem("unauthorized", "missing or invalid credentials: no tool opens to this request", {
      headers: BEARER_CHALLENGE,
    }).toResponse();
  }
  let rpc: RpcRequest;
  try {
    rpc = await readRpc(req);
  } catch (e) {
    if (e instanceof RpcError) return rpcResponse(rpcError(null, e), e.httpStatus);
    throw e;
  }
  // A notification (`notifications/initialized`, `notifications/cancelled`) is taken, never answered.
  if (!rpc.hasId) return new Response(null, { status: 202 });
  const metaVersion = versionInMeta(rpc.params);
  const stateless = metaVersion === STATELESS_VERSION || header === STATELESS_VERSION;
  const ctx: McpContext = {
    served,
    env,
    req,
    carry,
    opened,
    stateless,
    version: stateless ? STATELESS_VERSION : (header ?? LEGACY_VERSIONS[0]),
  };
  try {
    if (
      metaVersion !== null &&
      metaVersion !== STATELESS_VERSION &&
      !(LEGACY_VERSIONS as readonly string[]).includes(metaVersion)
    ) {
      throw unsupported(metaVersion, UNSUPPORTED_PROTOCOL_VERSION);
    }
    const answer = await dispatch(rpc, ctx);
    if (answer instanceof Response) return answer;
    return rpcResponse(rpcResult(rpc.id, dressed(answer as JsonObject, ctx)));
  } catch (e) {
    const err =
      e instanceof RpcError ? e : new RpcError(INTERNAL_ERROR, "the server failed to handle this request");
    if (!(e instanceof RpcError))
      console.error("mcp: unhandled error", e instanceof Error ? e.name : typeof e);
    // The stateless revision answers an unknown method 404 (its transport says so).
    const status = stateless && err.code === METHOD_NOT_FOUND ? 404 : err.httpStatus;
    return rpcResponse(rpcError(rpc.id, err), status);
  }
}

async function dispatch(rpc: RpcRequest, ctx: McpContext): Promise<Json | Response> {
  switch (rpc.method) {
    case "initialize":
      return initialize(rpc.params);
    case "server/discover":
      return discover();
    case "ping":
      return {};
    case "tools/list":
      // The stateless revision's lists may be cached: for a minute, by this caller only (its credential chose them).
      return ctx.stateless
        ? { tools: toolsOf(ctx), ttlMs: 60_000, cacheScope: "private" }
        : { tools: toolsOf(ctx) };
    case "tools/call":
      return callTool(rpc, ctx);
    case "tasks/get":
      return getTask(rpc.params, ctx);
    case "tasks/result":
      return taskResult(rpc.params, ctx);
    case "tasks/list":
      return listTasks(rpc.params, ctx);
    case "tasks/cancel":
      return cancelTask(rpc.params, ctx);
    default:
      throw new RpcError(METHOD_NOT_FOUND, `Method not found: ${rpc.method}`);
  }
}

/** `initialize`: the version asked for when it is served, else the newest; no session is made. */
function initialize(params: JsonObject): Json {
  const asked = typeof params.protocolVersion === "string" ? params.protocolVersion : "";
  const version = (LEGACY_VERSIONS as readonly string[]).includes(asked) ? asked : LEGACY_VERSIONS[0];
  return {
    protocolVersion: version,
    capabilities: capabilities(version !== LEGACY_VERSIONS[0]),
    serverInfo: SERVER_INFO,
    instructions:
      "Each tool runs a workflow as one durable run; the result's _meta names it (io.workflow-edge/run_id). A long run can be called as a task.",
  };
}

/** `server/discover` (2026-07-28): what a stateless client would have learnt from `initialize`. */
function discover(): Json {
  return {
    supportedVersions: [STATELESS_VERSION, ...LEGACY_VERSIONS],
    capabilities: { tools: { listChanged: false } },
    ttlMs: DISCOVER_TTL_MS,
    // What a caller may list depends on its credential: no shared cache may keep it.
    cacheScope: "private",
  };
}

function capabilities(withoutTasks: boolean): JsonObject {
  const tools = { tools: { listChanged: false } };
  return withoutTasks
    ? tools
    : { ...tools, tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } };
}

function versionInMeta(params: JsonObject): string | null {
  const meta = params._meta;
  if (!meta || typeof meta !== "object" || Array.isArray(meta)) return null;
  const v = (meta as JsonObject)[VERSION_META];
  return typeof v === "string" ? v : null;
}

/** The stateless revision's code for a version the server does not speak. */
const UNSUPPORTED_PROTOCOL_VERSION = -32022;

function unsupported(requested: string, code = INVALID_REQUEST): RpcError {
  return new RpcError(
    code,
    "Unsupported protocol version",
    { supported: [STATELESS_VERSION, ...LEGACY_VERSIONS], requested },
    400,
  );
}

/**
 * The Streamable HTTP transport's rule against DNS rebinding: a request that names an `Origin`
 * (a browser's) must come from this Worker's own origin or one listed in `MCP_ALLOWED_ORIGINS`
 * (comma-separated; `*` any); otherwise 403. Clients outside a browser send none.
 */
function refusedOrigin(req: Request, env: Record<string, unknown>): Response | null {
  const origin = req.headers.get("origin");
  if (origin === null || origin === new URL(req.url).origin) return null;
  const allowed =
    typeof env.MCP_ALLOWED_ORIGINS === "string"
      ? env.MCP_ALLOWED_ORIGINS.split(",").map((s) => s.trim())
      : [];
  if (allowed.includes("*") || allowed.includes(origin)) return null;
  return rpcResponse(rpcError(null, new RpcError(INVALID_REQUEST, `Origin ${origin} is not allowed`)), 403);
}
