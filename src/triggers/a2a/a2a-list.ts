/**
 * `ListTasks` (docs/a2a.md, "Listing tasks"): this agent's tasks, newest first, from the run listing
 * (a few seconds behind the runs, as `GET /runs` is): by `contextId` (the search key `a2a_context`
 * the build gives every A2A agent), by `status`, changed after `statusTimestampAfter`; `pageSize`
 * 1 to 100 (default 50), `pageToken` to go on (`nextPageToken` is "" on the last page). The listing
 * has no count: `totalSize` is what this page and the ones before it listed, plus one when there
 * are more (a lower bound).
 */
import type { Json, JsonObject } from "../../bundle.ts";
import type { RunStatus } from "../../engine/types.ts";
import { residencyOf } from "../../run/jurisdiction.ts";
import { listRuns, type Position } from "../../run/listing/listing.ts";
import { runStub } from "../../run/run-rpc.ts";
import { callerState } from "../protocol-run.ts";
import type { A2aContext } from "./a2a-context.ts";
import { badRequest } from "./a2a-errors.ts";
import { STATES, taskOf } from "./a2a-task.ts";

const DEFAULT_PAGE = 50;

/** Which run statuses can be in an A2A state (the listing filters on the run's). */
const RUN_STATUS: Record<string, RunStatus | null> = {
  TASK_STATE_SUBMITTED: null,
  TASK_STATE_WORKING: "running",
  TASK_STATE_INPUT_REQUIRED: "running",
  TASK_STATE_COMPLETED: "complete",
  TASK_STATE_FAILED: "failed",
  TASK_STATE_CANCELED: "canceled",
};

interface Token {
  after: Position;
  seen: number;
}

export async function listTasks(p: JsonObject, ctx: A2aContext): Promise<Json> {
  const bad = (field: string, description: string) =>
    badRequest("invalid ListTasks request", [{ field, description }]);
  const pageSize = p.pageSize === undefined ? DEFAULT_PAGE : p.pageSize;
  if (!(Number.isInteger(pageSize) && (pageSize as number) >= 1 && (pageSize as number) <= 100))
    throw bad("pageSize", "an integer from 1 to 100");
  const size = pageSize as number;
  const status = p.status === undefined || p.status === "TASK_STATE_UNSPECIFIED" ? null : p.status;
  if (status !== null && (typeof status !== "string" || !(status in RUN_STATUS)))
    throw bad("status", `one of ${Object.keys(RUN_STATUS).join(", ")}`);
  const after = typeof p.statusTimestampAfter === "string" ? Date.parse(p.statusTimestampAfter) : null;
  if (after !== null && Number.isNaN(after)) throw bad("statusTimestampAfter", "an RFC 3339 time");
  const token = p.pageToken === undefined || p.pageToken === "" ? null : readToken(p.pageToken, bad);
  const contextId = typeof p.contextId === "string" && p.contextId !== "" ? p.contextId : null;
  const page = await listRuns(ctx.env, {
    workflow: ctx.wf.name,
    residency: residencyOf(ctx.wf),
    status: status === null ? null : (RUN_STATUS[status as string] ?? null),
    limit: size,
    after: token?.after ?? null,
    search: contextId ? { a2a_context: contextId } : null,
  });
  const views = await Promise.all(page.runs.map((r) => runStub(ctx.env, r.run_id)?.view() ?? null));
  const historyLength = typeof p.historyLength === "number" ? p.historyLength : null;
  const tasks = views.flatMap((view, i) => {
    if (!view) return [];
    const state = STATES[callerState(view)];
    if (status !== null && state !== status) return [];
    const changed = Date.parse(view.envelope.finished_at ?? (page.runs[i]?.created_at as string));
    if (after !== null && changed <= after) return [];
    return [taskOf(view, null, { historyLength, includeArtifacts: p.includeArtifacts === true })];
  });
  // Without includeArtifacts the artifacts are left out entirely.
  if (p.includeArtifacts !== true) for (const t of tasks) delete t.artifacts;
  const seen = (token?.seen ?? 0) + page.runs.length;
  const next = page.next ? tokenOf({ after: page.next, seen }) : "";
  return { tasks, nextPageToken: next, pageSize: size, totalSize: seen + (next ? 1 : 0) };
}

function tokenOf(t: Token): string {
  return btoa(JSON.stringify([t.after.t, t.after.id, t.seen])).replace(/=+$/, "");
}

function readToken(raw: Json, bad: (f: string, d: string) => Error): Token {
  try {
    const [t, id, seen] = JSON.parse(atob(String(raw))) as [unknown, unknown, unknown];
    if (typeof t === "number" && typeof id === "string" && typeof seen === "number")
      return { after: { t, id }, seen };
  } catch {
    // Not one of ours.
  }
  throw bad("pageToken", "not a token this agent gave");
}
