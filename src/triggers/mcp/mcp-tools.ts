/**
 * The MCP server's tools (docs/protocols.md, "MCP server"): one per workflow that declares
 * `invoke.mcp` and whose credentials the request holds. `tools/call` starts the same run an invoke
 * would (src/triggers/start-request.ts) and answers at its end with the output's JSON text, the
 * output itself as `structuredContent` when the tool declares an `outputSchema`, and the run's id
 * in `_meta`. What the caller got wrong (params that fail the schema, a rate limit) and a run that
 * failed are results with `isError: true`, so the calling model can correct itself; an unknown
 * tool is JSON-RPC's -32602. With a `progressToken` the answer is an SSE stream of
 * `notifications/progress` (steps finished of the steps) before the result.
 */
import type { CompiledWorkflow, Json, JsonObject, JsonSchema } from "../../bundle.ts";
import { isObject } from "../../common/guards.ts";
import { HttpProblem } from "../../common/problem.ts";
import type { Envelope } from "../../run/envelope.ts";
import { RunRefusal } from "../../run/refusal.ts";
import { type StartOutcome, startRun } from "../../run/start/start-run.ts";
import { INVALID_PARAMS, RpcError, type RpcRequest, rpcResult } from "../json-rpc.ts";
import { runEnd, runEvents } from "../protocol-run.ts";
import { idempotencyKeyOf, startRequest } from "../start-request.ts";
import { dressed, type McpContext, openedTool, tasksOffered } from "./mcp-context.ts";
import { toolError, toolResult } from "./mcp-results.ts";
import { createdTask } from "./mcp-tasks.ts";

/** How long one call waits in its first request to the run (then it asks again). */
const FIRST_WAIT_S = 60;

export function toolsOf(ctx: McpContext): JsonObject[] {
  return ctx.opened
    .map(({ wf }) => toolOf(wf, ctx))
    .sort((a, b) => (String(a.name) < String(b.name) ? -1 : 1));
}

function toolOf(wf: CompiledWorkflow, ctx: McpContext): JsonObject {
  const mcp = wf.mcp;
  const tool: JsonObject = {
    name: wf.name,
    title: mcp?.title ?? wf.name,
    inputSchema: inputSchemaOf(wf.paramsSchema),
  };
  if (mcp?.description) tool.description = mcp.description;
  if (mcp?.outputSchema) tool.outputSchema = mcp.outputSchema;
  if (tasksOffered(ctx)) tool.execution = { taskSupport: "optional" };
  return tool;
}

/** `params.schema` as MCP wants it: an object schema at the root (`type: object` said when it is not). */
function inputSchemaOf(schema: JsonSchema): JsonObject {
  if (!isObject(schema)) return { type: "object" };
  return schema.type === "object" ? (schema as JsonObject) : { ...(schema as JsonObject), type: "object" };
}

/** `tools/call`. */
export async function callTool(rpc: RpcRequest, ctx: McpContext): Promise<Json | Response> {
  const p = rpc.params;
  const found = openedTool(ctx, p.name);
  if (!found) throw new RpcError(INVALID_PARAMS, `Unknown tool: ${String(p.name)}`);
  const { key, wf } = found;
  const meta = isObject(p._meta) ? p._meta : {};
  const progressToken =
    typeof meta.progressToken === "string" || typeof meta.progressToken === "number"
      ? meta.progressToken
      : null;
  const task = tasksOffered(ctx) && isObject(p.task) ? p.task : null;
  if (p.arguments !== undefined && !isObject(p.arguments)) {
    return toolError("invalid_params", "arguments must be an object (the workflow's params)");
  }
  const args = (p.arguments ?? {}) as JsonObject;
  const waitS = task || progressToken !== null ? 0 : FIRST_WAIT_S;
  let result: StartOutcome;
  try {
    const raw = ctx.env as unknown as Record<string, unknown>;
    const runKey = idempotencyKeyOf(ctx.req.headers);
    const request = { params: args, headers: ctx.req.headers, url: ctx.req.url, runKey, waitS };
    const started = await startRequest(ctx.served.bundle, wf, request, raw);
    result = await startRun(ctx.env, key, wf, { ...started, carry: ctx.carry });
  } catch (e) {
    const problem = e instanceof RunRefusal ? HttpProblem.from(e) : e instanceof HttpProblem ? e : null;
    if (!problem) throw e;
    const details = (problem.errors ?? []).map((x) => `${x.path || "/"}: ${x.message}`);
    return toolError(problem.code, [problem.message, ...details].join("; "));
  }
  const refused = refusalOf(wf, result);
  if (refused) return refused;
  const runId = result.runId;
  if (task) return createdTask(runId, task, ctx);
  if (progressToken !== null) return progressStream(rpc, ctx, wf, runId, progressToken);
  const envelope = await runEnd(ctx.env, runId, "envelope" in result ? result.envelope : null);
  if (!envelope) return toolError("run_not_found", "the run is gone");
  return toolResult(wf, envelope);
}

/** A start that made no run, as a tool error (null: there is a run). */
function refusalOf(wf: CompiledWorkflow, result: StartOutcome): JsonObject | null {
  switch (result.outcome) {
    case "rate_limited":
      return toolError(
        "rate_limited",
        `too many calls of ${wf.name}; retry after ${wf.invoke.rateLimit?.periodS ?? 60} s`,
      );
    case "queue_full":
      return toolError(
        "queue_full",
        `${wf.name}'s queue for this key is full; retry after ${result.retryAfterS} s`,
      );
    case "skipped":
      return toolError("queue_full", `${wf.name} skips new runs while one of this key runs; retry later`);
    case "conflict":
      return toolError(
        "idempotency_conflict",
        "this Idempotency-Key was already used with different arguments",
      );
    default:
      return null;
  }
}

const encoder = new TextEncoder();

/**
 * The call's answer as SSE: a `notifications/progress` each time a top-level step finishes
 * (`progress` the steps finished, `total` the steps, `message` the step's id), then the result.
 */
function progressStream(
  rpc: RpcRequest,
  ctx: McpContext,
  wf: CompiledWorkflow,
  runId: string,
  token: string | number,
): Response {
  const { readable, writable } = new TransformStream<Uint8Array, Uint8Array>();
  const writer = writable.getWriter();
  const stop = new AbortController();
  writer.closed.catch(() => stop.abort());
  const send = (message: JsonObject) =>
    writer
      .write(encoder.encode(`event: message\ndata: ${JSON.stringify(message)}\n\n`))
      .catch(() => stop.abort());
  const follow = async () => {
    const finished = new Set<string>();
    let envelope: Envelope | null = null;
    for await (const ev of runEvents(ctx.env, runId, stop.signal)) {
      if (ev.type === "run.completed") {
        envelope = ev.data as unknown as Envelope;
        break;
      }
      const step = ev.data.step;
      const ended = ["step.completed", "step.failed", "step.skipped", "step.canceled"].includes(ev.type);
      if (!ended || typeof step !== "string" || step.includes("/") || finished.has(step)) continue;
      finished.add(step);
      await send({
        jsonrpc: "2.0",
        method: "notifications/progress",
        params: { progressToken: token, progress: finished.size, total: wf.steps.length, message: step },
      });
    }
    if (stop.signal.aborted) return;
    envelope ??= await runEnd(ctx.env, runId);
    const result = envelope ? toolResult(wf, envelope) : toolError("run_not_found", "the run is gone");
    await send(rpcResult(rpc.id, dressed(result, ctx)));
  };
  follow()
    .catch(() => {})
    .finally(() => writer.close().catch(() => {}));
  return new Response(readable, {
    headers: { "content-type": "text/event-stream", "cache-control": "no-store", "x-accel-buffering": "no" },
  });
}
