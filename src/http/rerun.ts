/**
 * Re-runs (SPEC 12): `POST /runs/{id}/rerun` and the bulk `POST /runs/rerun?workflow=…`. The
 * old run's object hands over its definition, inputs and records; which steps run again is
 * planned here (src/run/rerun.ts), on the old run's pinned definition or the one deployed now;
 * the old run then notes the re-run (a bulk re-run takes a run only if nobody re-ran it yet, so
 * concurrent bulk calls re-run each failed run once) and the new run starts in its own object
 * with the reused records.
 */
import type { Bundle, CompiledWorkflow, JsonObject } from "../bundle.ts";
import type { RunStatus } from "../engine/types.ts";
import { listRuns, type Position } from "../run/listing.ts";
import { planRerun } from "../run/rerun.ts";
import type { RunRpc, StartResult } from "../run/run-rpc.ts";
import { readObjectBody } from "./body.ts";
import { HttpProblem } from "./problem.ts";
import { decodeCursor, encodeCursor, parseLimit, single } from "./run-list.ts";
import { checkRunInputs, concurrencyOf, startRun } from "./start-run.ts";

export interface RerunRequest {
  from: string | null;
  definition: "pinned" | "current";
  params: JsonObject | null;
}

/** Where a re-run finds the definition deployed now. */
export interface Deployed {
  bundle: Bundle;
  /** The invocable workflow called `name`, or null. */
  lookup(name: string): { key: string; wf: CompiledWorkflow } | null;
}

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

export type RerunOutcome = { runId: string; result: StartResult & { outcome: "started" } } | "already";

/**
 * Re-runs the run behind `stub`. `once`: skip it (answer "already") if it was re-run before.
 * Throws the problems of SPEC 12 (run_not_found, run_active, nothing_to_rerun, unknown_step,
 * invalid_params).
 */
export async function rerun(
  env: Env,
  deployed: Deployed,
  oldRunId: string,
  stub: RunRpc,
  req: RerunRequest,
  o: { waitS: number; origin: string | null; once: boolean },
): Promise<RerunOutcome> {
  const source = await stub.rerunSource();
  if (source.outcome !== "finished") {
    if (source.outcome === "not_found") throw new HttpProblem("run_not_found", "no run with this id");
    throw new HttpProblem("run_active", "the run is still active: cancel it or wait for it to end");
  }
  if (source.status === "complete" && req.from === null) {
    throw new HttpProblem("nothing_to_rerun", 'the run completed: name a step to re-run from ("from")');
  }
  const oldWf = source.def.workflows[source.workflowKey];
  let def = source.def;
  let key = source.workflowKey;
  let wf = oldWf;
  if (req.definition === "current") {
    const now = oldWf ? deployed.lookup(oldWf.name) : null;
    if (!now) throw new HttpProblem("workflow_not_found", "the run's workflow is not deployed any more");
    ({ key, wf } = now);
    def = deployed.bundle;
  }
  if (!wf) throw new HttpProblem("internal_error", "the run's definition is incomplete");
  const params = req.params ?? source.params;
  checkRunInputs(def, wf, params, env as unknown as Record<string, unknown>);
  const records = new Map(source.records);
  const plan = planRerun(
    { runId: oldRunId, def: source.def, key: source.workflowKey, records },
    def,
    key,
    req.from,
  );
  if (plan.outcome === "unknown_step") {
    throw new HttpProblem("unknown_step", `no step "${req.from}" in ${wf.name}`, {
      errors: [{ path: "/from", message: "names no step of the workflow" }],
    });
  }
  const runId = env.RUNS.newUniqueId().toString();
  const claim = await stub.rerunStarted(runId, o.once);
  if (claim === "already") return "already";
  if (claim === "not_found") throw new HttpProblem("run_not_found", "no run with this id");
  if (claim === "active") throw new HttpProblem("run_active", "the run is still active");
  const result = await startRun(env, key, wf, {
    runId,
    params,
    request: source.request,
    idempotencyKey: null,
    waitS: o.waitS,
    origin: o.origin,
    definition: req.definition === "pinned" ? source.def : null,
    rerun: { of: oldRunId, reused: plan.reused },
    concurrency: concurrencyOf(wf, { params, request: source.request }),
  });
  if (result.outcome !== "started") throw new HttpProblem("internal_error", "the re-run could not start");
  return { runId, result: { ...result, outcome: "started" } };
}

const RERUNNABLE: readonly RunStatus[] = ["failed", "canceled"];

/**
 * `POST /runs/rerun?workflow=NAME&status=failed[&since=T][&limit=N][&cursor=C][&definition=current]`:
 * one page (newest first) of the workflow's listed runs in that status created at or after
 * `since`; each not re-run before is re-run once.
 */
export async function rerunMany(
  env: Env,
  deployed: Deployed,
  workflow: string,
  query: URLSearchParams,
  stubOf: (runId: string) => RunRpc | null,
  origin: string,
): Promise<{ runs: Array<{ rerun_of: string; run_id: string }>; next_cursor: string | null }> {
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
  const page = await listRuns(env, { workflow, status, limit, after });
  const inWindow = page.runs.filter((r) => since === null || Date.parse(r.created_at) >= since);
  const outcomes = await Promise.all(
    inWindow.map(async (r) => {
      const stub = stubOf(r.run_id);
      if (!stub) return null;
      try {
        const done = await rerun(
          env,
          deployed,
          r.run_id,
          stub,
          { from: null, definition, params: null },
          { waitS: 0, origin, once: true },
        );
        return done === "already" ? null : { rerun_of: r.run_id, run_id: done.runId };
      } catch (e) {
        // Listed as failed but gone, or not re-runnable any more: nothing to re-run there.
        if (e instanceof HttpProblem && e.status < 500) return null;
        throw e;
      }
    }),
  );
  // Older runs than `since` end the window: no cursor past it.
  const more = page.next !== null && inWindow.length === page.runs.length;
  return {
    runs: outcomes.filter((x): x is { rerun_of: string; run_id: string } => x !== null),
    next_cursor: more && page.next ? await encodeCursor(workflow, status, page.next) : null,
  };
}
