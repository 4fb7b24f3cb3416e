/**
 * Tasks (MCP 2025-11-25; docs/protocols.md, "Tasks"): a `tools/call` with `task` answers at once and
 * its run is the task (`taskId` = the run id). `tasks/get` maps the run's state (pending, queued,
 * running or in a durable sleep: `working`; waiting for an approval or a signal: `input_required`;
 * then `completed`, `failed`, `cancelled`), `tasks/result` waits for the end and answers the call's
 * result, `tasks/list` lists the runs of the tools the request opens (newest first, from the run
 * listing), `tasks/cancel` cancels the run. A task of a tool the request does not open, or no run
 * at all, is unknown (-32602), as the protocol says.
 */
import type { CompiledWorkflow, Json, JsonObject } from "../../bundle.ts";
import { isObject } from "../../common/guards.ts";
import type { Envelope } from "../../run/envelope.ts";
import { residencyOf } from "../../run/jurisdiction.ts";
import { type ListedRun, listRuns, type Position } from "../../run/listing/listing.ts";
import { retentionMs } from "../../run/listing/listing-layout.ts";
import type { RunView } from "../../run/run-calls.ts";
import { type RunRpc, runStub } from "../../run/run-rpc.ts";
import { INVALID_PARAMS, RpcError } from "../json-rpc.ts";
import { awaitedBy, callerState, runEnd } from "../protocol-run.ts";
import type { McpContext } from "./mcp-context.ts";
import { toolError, toolResult } from "./mcp-results.ts";

/** How often a client is asked to poll a task. */
const POLL_INTERVAL_MS = 1_000;
const RELATED_TASK = "io.modelcontextprotocol/related-task";
const PAGE_SIZE = 50;

type TaskStatus = "working" | "input_required" | "completed" | "failed" | "cancelled";

const STATUS: Record<ReturnType<typeof callerState>, TaskStatus> = {
  submitted: "working",
  working: "working",
  input_required: "input_required",
  completed: "completed",
  failed: "failed",
  canceled: "cancelled",
};

/** The answer to a `tools/call` with `task`: the run, as a task that is working. */
export async function createdTask(runId: string, _asked: JsonObject, ctx: McpContext): Promise<Json> {
  const view = await runStub(ctx.env, runId)?.view();
  if (!view) throw new RpcError(INVALID_PARAMS, "the run is gone");
  return { task: { ...taskOf(view, ctx), status: "working" } };
}

function taskOf(view: RunView, ctx: McpContext): JsonObject {
  const e = view.envelope;
  const status = STATUS[callerState(view)];
  const task: JsonObject = {
    taskId: e.run_id,
    status,
    createdAt: e.created_at,
    lastUpdatedAt: lastUpdate(e),
    // Runs are kept this long after they end: the task is found as long as its run is.
    ttl: retentionMs(ctx.env as unknown as { RUN_RETENTION_S?: string }),
    pollInterval: POLL_INTERVAL_MS,
  };
  const message = statusMessage(view, status);
  if (message) task.statusMessage = message;
  return task;
}

function statusMessage(view: RunView, status: TaskStatus): string | null {
  if (status === "input_required") {
    return awaitedBy(view)
      .map((a) =>
        a.kind === "approval"
          ? `step ${a.step} waits for an approval`
          : `step ${a.step} waits for the signal ${a.signal}`,
      )
      .join("; ");
  }
  const error = view.envelope.error;
  return status === "failed" && error ? `${error.code}: ${error.message}` : null;
}

/** The last time anything of the run changed: its end, else its latest step start or end, else its creation. */
function lastUpdate(e: Envelope): string {
  if (e.finished_at) return e.finished_at;
  let last = e.created_at;
  const walk = (steps: Envelope["steps"]) => {
    for (const s of steps) {
      for (const t of [s.started_at, s.finished_at]) if (t && t > last) last = t;
      walk(s.steps ?? []);
    }
  };
  walk(e.steps);
  return last;
}

/** The run of task `params.taskId` and its workflow, when it is a run of a tool the request opens. */
async function taskRun(
  params: JsonObject,
  ctx: McpContext,
): Promise<{ stub: RunRpc; view: RunView; wf: CompiledWorkflow }> {
  const id = params.taskId;
  const stub = typeof id === "string" ? runStub(ctx.env, id) : null;
  const view = stub ? await stub.view() : null;
  const tool = view ? ctx.opened.find((f) => f.wf.name === view.envelope.workflow) : undefined;
  if (!stub || !view || !tool || view.kept === false)
    throw new RpcError(INVALID_PARAMS, `Unknown task: ${String(id)}`);
  return { stub, view, wf: tool.wf };
}

export async function getTask(params: JsonObject, ctx: McpContext): Promise<Json> {
  return taskOf((await taskRun(params, ctx)).view, ctx);
}

/** `tasks/result`: the call's result once the run has ended, marked as the task's. */
export async function taskResult(params: JsonObject, ctx: McpContext): Promise<Json> {
  const { view, wf } = await taskRun(params, ctx);
  const envelope = await runEnd(ctx.env, view.envelope.run_id, view.envelope);
  const result = envelope ? toolResult(wf, envelope) : toolError("run_not_found", "the run is gone");
  const meta = isObject(result._meta) ? (result._meta as JsonObject) : {};
  return { ...result, _meta: { ...meta, [RELATED_TASK]: { taskId: view.envelope.run_id } } };
}

/** `tasks/cancel`: the run canceled, as a task; a finished one cannot be (-32602). */
export async function cancelTask(params: JsonObject, ctx: McpContext): Promise<Json> {
  const { stub, view } = await taskRun(params, ctx);
  const result = await stub.cancel();
  if (result.outcome !== "canceled") {
    const status = STATUS[callerState((await stub.view()) ?? view)];
    throw new RpcError(INVALID_PARAMS, `Cannot cancel task: already in terminal status '${status}'`);
  }
  return { ...taskOf({ ...view, envelope: result.envelope }, ctx), status: "cancelled" };
}

/**
 * `tasks/list`: the runs of every tool the request opens, newest first. Each tool's listing is read
 * after the cursor's position and the pages merged; where a listing stopped short (its next page
 * starts further on), nothing older than that is given yet, so no run is skipped or repeated.
 */
export async function listTasks(params: JsonObject, ctx: McpContext): Promise<Json> {
  const after = params.cursor === undefined ? null : readCursor(params.cursor);
  const pages = await Promise.all(
    ctx.opened.map(({ wf }) =>
      listRuns(ctx.env, {
        workflow: wf.name,
        residency: residencyOf(wf),
        status: null,
        limit: PAGE_SIZE,
        after,
      }),
    ),
  );
  let bound: Position | null = null;
  for (const p of pages) if (p.next && (bound === null || compare(p.next, bound) > 0)) bound = p.next;
  const merged = pages
    .flatMap((p) => p.runs)
    .filter((r) => bound === null || compare(positionOf(r), bound) > 0)
    .sort((a, b) => compare(positionOf(b), positionOf(a)));
  const page = merged.slice(0, PAGE_SIZE);
  const last = page.at(-1);
  const next = merged.length > PAGE_SIZE && last ? positionOf(last) : bound;
  const views = await Promise.all(page.map((r) => runStub(ctx.env, r.run_id)?.view() ?? null));
  const tasks = page.map((r, i) => {
    const view = views[i];
    return view ? taskOf(view, ctx) : listedTask(r, ctx);
  });
  return next ? { tasks, nextCursor: cursorOf(next) } : { tasks };
}

/** A listed run whose object has no view (an express run that kept no record). */
function listedTask(r: ListedRun, ctx: McpContext): JsonObject {
  const status: TaskStatus =
    r.status === "complete"
      ? "completed"
      : r.status === "failed"
        ? "failed"
        : r.status === "canceled"
          ? "cancelled"
          : "working";
  return {
    taskId: r.run_id,
    status,
    createdAt: r.created_at,
    lastUpdatedAt: r.finished_at ?? r.created_at,
    ttl: retentionMs(ctx.env as unknown as { RUN_RETENTION_S?: string }),
    pollInterval: POLL_INTERVAL_MS,
  };
}

function positionOf(r: ListedRun): Position {
  return { t: Date.parse(r.created_at), id: r.run_id };
}

/** Newest-first order: positive when `a` comes before (is newer than) `b`. */
function compare(a: Position, b: Position): number {
  return a.t !== b.t ? a.t - b.t : a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

function cursorOf(p: Position): string {
  return btoa(JSON.stringify([p.t, p.id])).replace(/=+$/, "");
}

function readCursor(raw: Json): Position {
  try {
    const [t, id] = JSON.parse(atob(String(raw))) as [unknown, unknown];
    if (typeof t === "number" && Number.isSafeInteger(t) && typeof id === "string" && id.length <= 80)
      return { t, id };
  } catch {
    // Not one of ours: refused below.
  }
  throw new RpcError(INVALID_PARAMS, "Invalid cursor");
}
