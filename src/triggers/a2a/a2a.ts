/**
 * A workflow as its own A2A 1.0 agent (docs/a2a.md): the Agent Card at
 * `/a2a/{name}/.well-known/agent-card.json`, and JSON-RPC at `POST /a2a/{name}` with the workflow's
 * credentials (a missing or wrong one: 401 problem+json before any JSON-RPC) and `A2A-Version: 1.0`
 * (another or none, which means 0.3: -32009). A task is a run: `SendMessage` starts one (the same
 * start request as an invoke) or answers the input it waits for (a2a-input.ts), then answers when
 * it ends or needs input; `SendStreamingMessage` and `SubscribeToTask` follow it (a2a-stream.ts);
 * `GetTask`, `ListTasks`, `CancelTask`, and the push configs (a2a-push.ts).
 */
import type { CompiledWorkflow, Json, JsonObject } from "../../bundle.ts";
import { HttpProblem } from "../../common/problem.ts";
import { RunRefusal } from "../../run/refusal.ts";
import { runStub } from "../../run/run-rpc.ts";
import type { Deployed } from "../../run/start/reruns.ts";
import { type StartOutcome, startRun } from "../../run/start/start-run.ts";
import { requireCaller } from "../credentials.ts";
import {
  INTERNAL_ERROR,
  METHOD_NOT_FOUND,
  RpcError,
  type RpcError as RpcErrorType,
  type RpcRequest,
  readRpc,
  rpcError,
  rpcResponse,
  rpcResult,
} from "../json-rpc.ts";
import { isActive, settled } from "../protocol-run.ts";
import { startRequest } from "../start-request.ts";
import { agentCard, PROTOCOL_VERSION } from "./a2a-card.ts";
import { type A2aContext, inputFacts, taskRun } from "./a2a-context.ts";
import { a2aError, badRequest, refused } from "./a2a-errors.ts";
import { answerInput } from "./a2a-input.ts";
import { listTasks } from "./a2a-list.ts";
import { a2aParams, readMessage } from "./a2a-message.ts";
import { pushMethod, pushOnStart } from "./a2a-push.ts";
import { streamTask } from "./a2a-stream.ts";
import { taskOf } from "./a2a-task.ts";

/** How long a blocking call waits in the first request to a run that cannot ask for input. */
const FIRST_WAIT_S = 60;

function servedAgent(served: Deployed, name: string): { key: string; wf: CompiledWorkflow } {
  const found = served.lookup(name);
  if (!found?.wf.a2a) throw new HttpProblem("workflow_not_found", `no A2A agent named "${name}"`);
  return found;
}

/** `GET /a2a/{name}/.well-known/agent-card.json`: for anyone. */
export function a2aCard(served: Deployed, name: string, req: Request): Response {
  const { wf } = servedAgent(served, name);
  return Response.json(agentCard(wf, new URL(req.url).origin));
}

/** `POST /a2a/{name}`. */
export async function a2aEndpoint(
  served: Deployed,
  env: Env,
  name: string,
  req: Request,
  carry?: (work: Promise<void>) => void,
): Promise<Response> {
  const { key, wf } = servedAgent(served, name);
  await requireCaller(wf.auth, req.headers, env as unknown as Record<string, unknown>);
  let rpc: RpcRequest;
  try {
    rpc = await readRpc(req);
  } catch (e) {
    if (e instanceof RpcError) return rpcResponse(rpcError(null, e), e.httpStatus);
    throw e;
  }
  if (!rpc.hasId) return new Response(null, { status: 202 });
  const ctx: A2aContext = { served, env, req, carry, key, wf };
  try {
    const version = req.headers.get("a2a-version") ?? new URL(req.url).searchParams.get("A2A-Version") ?? "";
    if (version.trim() !== PROTOCOL_VERSION) {
      throw a2aError(
        "VERSION_NOT_SUPPORTED",
        `A2A protocol version ${version.trim() || "0.3 (no A2A-Version header)"} is not supported; this agent speaks ${PROTOCOL_VERSION}`,
      );
    }
    const answer = await dispatch(rpc, ctx);
    return answer instanceof Response ? answer : rpcResponse(rpcResult(rpc.id, answer));
  } catch (e) {
    const err = asRpcError(e);
    return rpcResponse(rpcError(rpc.id, err), err.httpStatus, retryAfter(e));
  }
}

async function dispatch(rpc: RpcRequest, ctx: A2aContext): Promise<Json | Response> {
  const p = rpc.params;
  switch (rpc.method) {
    case "SendMessage":
      return sendMessage(p, ctx, null);
    case "SendStreamingMessage":
      return sendMessage(p, ctx, rpc);
    case "GetTask": {
      const { view } = await taskRun(p.id, ctx);
      return taskOf(view, await inputFacts(view, ctx), { historyLength: historyLengthOf(p) });
    }
    case "ListTasks":
      return listTasks(p, ctx);
    case "CancelTask":
      return cancelTask(p, ctx);
    case "SubscribeToTask": {
      const { view } = await taskRun(p.id, ctx);
      if (!isActive(view.envelope))
        throw a2aError("UNSUPPORTED_OPERATION", "the task has finished: there is nothing to follow");
      return streamTask(ctx, view.envelope.run_id, rpc.id, null);
    }
    case "CreateTaskPushNotificationConfig":
    case "GetTaskPushNotificationConfig":
    case "ListTaskPushNotificationConfigs":
    case "DeleteTaskPushNotificationConfig":
      return pushMethod(rpc.method, p, ctx);
    case "GetExtendedAgentCard":
      throw a2aError("UNSUPPORTED_OPERATION", "this agent has no extended card");
    default:
      throw new RpcError(METHOD_NOT_FOUND, `Method not found: ${rpc.method}`);
  }
}

function historyLengthOf(p: JsonObject): number | null {
  return typeof p.historyLength === "number" && p.historyLength >= 0 ? p.historyLength : null;
}

/** `SendMessage` / `SendStreamingMessage` (`stream`: the request, for the stream's responses). */
async function sendMessage(
  p: JsonObject,
  ctx: A2aContext,
  stream: RpcRequest | null,
): Promise<Json | Response> {
  const m = readMessage(p);
  if (m.taskId !== null) {
    const runId = await answerInput(m, ctx);
    if (stream) return streamTask(ctx, runId, stream.id, m.historyLength);
    return { task: await blockingTask(runId, ctx, m.returnImmediately, m.historyLength) };
  }
  const a2a = ctx.wf.a2a;
  if (!a2a) throw a2aError("UNSUPPORTED_OPERATION", "not an A2A agent");
  const contextId = m.contextId ?? crypto.randomUUID();
  const raw = ctx.env as unknown as Record<string, unknown>;
  // Runs that can never stop for input are waited for in the start itself (one request to the run).
  const fast = !stream && !m.returnImmediately && !mayAskForInput(ctx, ctx.wf);
  let result: StartOutcome;
  try {
    const started = await startRequest(
      ctx.served.bundle,
      ctx.wf,
      {
        params: a2aParams(a2a, m),
        headers: ctx.req.headers,
        url: ctx.req.url,
        // A client's retry of the same message reaches the task it started.
        runKey: `a2a:${m.messageId}`,
        waitS: fast ? FIRST_WAIT_S : 0,
      },
      raw,
    );
    const request = { ...started.request, a2a: { context_id: contextId, message: m.message } };
    result = await startRun(ctx.env, ctx.key, ctx.wf, { ...started, request, carry: ctx.carry });
  } catch (e) {
    throw asRpcError(e);
  }
  const runId = runOf(result);
  if (m.push) await pushOnStart(runId, m.push, ctx);
  if (stream) return streamTask(ctx, runId, stream.id, m.historyLength);
  const envelope = "envelope" in result ? result.envelope : null;
  if (fast && envelope && !isActive(envelope)) {
    return { task: taskOf({ envelope, graph: [], auth: null }, null, { historyLength: m.historyLength }) };
  }
  return { task: await blockingTask(runId, ctx, m.returnImmediately, m.historyLength) };
}

/** The task once it has ended or needs input (at once with `returnImmediately`). */
async function blockingTask(
  runId: string,
  ctx: A2aContext,
  now: boolean,
  historyLength: number | null,
): Promise<JsonObject> {
  const view = now ? await runStub(ctx.env, runId)?.view() : await settled(ctx.env, runId);
  if (!view) throw a2aError("TASK_NOT_FOUND", "the task is gone", { taskId: runId });
  return taskOf(view, await inputFacts(view, ctx), { historyLength });
}

function runOf(result: StartOutcome): string {
  switch (result.outcome) {
    case "rate_limited":
      throw refused("rate_limited", "too many tasks for this agent; retry later", 429);
    case "queue_full":
      throw refused("queue_full", "this agent's queue for the key is full; retry later", 429);
    case "skipped":
      throw refused("queue_full", "this agent skips new tasks while one of this key runs; retry later", 429);
    case "conflict":
      throw badRequest("this messageId was already used with another message", [
        { field: "message.messageId", description: "already started a task with other params" },
      ]);
    default:
      return result.runId;
  }
}

async function cancelTask(p: JsonObject, ctx: A2aContext): Promise<Json> {
  const { view } = await taskRun(p.id, ctx);
  const stub = runStub(ctx.env, view.envelope.run_id);
  const result = stub ? await stub.cancel() : { outcome: "not_found" as const };
  if (result.outcome !== "canceled")
    throw a2aError("TASK_NOT_CANCELABLE", "the task has finished", { taskId: view.envelope.run_id });
  const after = (await stub?.view()) ?? { ...view, envelope: result.envelope };
  return taskOf(after, null, {});
}

/** Whether a workflow can stop for a person or a signal: a signal wait or an agent step (approvals), here or in a sub-workflow. */
const mayAsk = new Map<string, boolean>();
function mayAskForInput(ctx: A2aContext, wf: CompiledWorkflow, depth = 0): boolean {
  const known = mayAsk.get(wf.key);
  if (known !== undefined) return known;
  const asks = wf.steps.some((s) => {
    if (s.kind === "agent") return true;
    if (s.kind === "wait") return s.signal !== null;
    if (s.kind === "workflow" && depth < 10) {
      const child = ctx.served.bundle.workflows[s.workflow];
      return child ? mayAskForInput(ctx, child, depth + 1) : true;
    }
    return false;
  });
  mayAsk.set(wf.key, asks);
  return asks;
}

/** What was thrown, as the JSON-RPC error the caller gets (a caller's mistake is never a 5xx). */
function asRpcError(e: unknown): RpcErrorType {
  if (e instanceof RpcError) return e;
  const problem = e instanceof RunRefusal ? HttpProblem.from(e) : e instanceof HttpProblem ? e : null;
  if (problem?.code === "invalid_params") {
    return badRequest(
      problem.message,
      (problem.errors ?? []).map((x) => ({ field: x.path || "/", description: x.message })),
    );
  }
  if (problem?.code === "rate_limited" || problem?.code === "queue_full")
    return refused(problem.code, problem.message, 429);
  if (problem) return refused(problem.code, problem.message, problem.status >= 500 ? 500 : 400);
  console.error("a2a: unhandled error", e instanceof Error ? e.name : typeof e);
  return new RpcError(INTERNAL_ERROR, "the server failed to handle this request");
}

function retryAfter(e: unknown): Record<string, string> {
  const problem = e instanceof HttpProblem ? e : null;
  const after = problem?.headers["retry-after"];
  return after ? { "retry-after": after } : {};
}
