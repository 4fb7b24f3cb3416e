/**
 * Re-runs as the HTTP face sees them (docs/http-api.md, "Re-runs"): the body of
 * `POST /runs/{id}/rerun` and the query of the bulk `POST /runs/rerun?workflow=…`, parsed and
 * checked; the run layer (src/run/start/reruns.ts) does the re-running.
 */
import type { CompiledWorkflow, JsonObject } from "../bundle.ts";
import { HttpProblem } from "../common/problem.ts";
import type { RunStatus } from "../engine/types.ts";
import { residencyOf } from "../run/jurisdiction.ts";
import type { Position } from "../run/listing/listing.ts";
import { type BulkRerun, RERUNNABLE, type RerunRequest } from "../run/start/reruns.ts";
import { readObjectBody } from "../triggers/request-body.ts";
import { decodeCursor, encodeCursor, parseLimit, single } from "./run-list.ts";

function invalid(detail: string, path: string, message: string): HttpProblem {
  return new HttpProblem("invalid_rerun", detail, { errors: [{ path, message }] });
}

/** The optional JSON body `{"from"?, "definition"?, "params"?}`. */
export async function readRerunRequest(req: Request): Promise<RerunRequest> {
  const body = await readObjectBody(
    req,
    () =>
      new HttpProblem("invalid_rerun", 'the body must be a JSON object {"from"?, "definition"?, "params"?}'),
  );
  const { from = null, definition = "pinned", params = null } = body;
  if (from !== null && (typeof from !== "string" || from === "")) {
    throw invalid("`from` must be a step path", "/from", "must be a non-empty string");
  }
  if (definition !== "pinned" && definition !== "current") {
    throw invalid(
      '`definition` must be "pinned" or "current"',
      "/definition",
      'must be "pinned" or "current"',
    );
  }
  if (params !== null && (typeof params !== "object" || Array.isArray(params))) {
    throw invalid("`params` must be a JSON object", "/params", "must be an object");
  }
  return { from, definition, params: params as JsonObject | null };
}

/**
 * The query of `POST /runs/rerun?workflow=NAME&status=failed[&since=T][&limit=N][&cursor=C][&definition=current]`
 * (400 `invalid_query` for a bad value).
 */
export async function readBulkRerun(wf: CompiledWorkflow, query: URLSearchParams): Promise<BulkRerun> {
  const workflow = wf.name;
  const one = (name: string) => single(query, name);
  const status = (one("status") ?? "failed") as RunStatus;
  if (!RERUNNABLE.includes(status)) {
    throw new HttpProblem("invalid_query", `status must be one of ${RERUNNABLE.join(", ")}`);
  }
  const sinceRaw = one("since");
  const since = sinceRaw === null ? null : Date.parse(sinceRaw);
  if (since !== null && (Number.isNaN(since) || !/^\d{4}-\d\d-\d\dT/.test(sinceRaw ?? ""))) {
    throw new HttpProblem("invalid_query", "since must be an RFC 3339 date-time");
  }
  const definition = one("definition") ?? "pinned";
  if (definition !== "pinned" && definition !== "current") {
    throw new HttpProblem("invalid_query", 'definition must be "pinned" or "current"');
  }
  const limit = parseLimit(one("limit"));
  const rawCursor = one("cursor");
  const after: Position | null = rawCursor === null ? null : await decodeCursor(rawCursor, workflow, status);
  return { workflow, residency: residencyOf(wf), status, since, definition, limit, after };
}

/** The bulk re-run's cursor for the next page. */
export async function bulkCursor(q: BulkRerun, next: Position | null): Promise<string | null> {
  return next ? encodeCursor(q.workflow, q.status, next) : null;
}
