/**
 * Re-runs (docs/http-api.md, "Re-runs"), orchestrated in the run layer: the old run's object hands
 * over its definition, inputs and records; which steps run again is planned by rerun-plan.ts, on the
 * old run's pinned definition or the one deployed now; the old run then notes the re-run (a bulk
 * re-run takes a run only if nobody re-ran it yet, so concurrent bulk calls re-run each failed run
 * once) and the new run starts in its own object with the reused records. Refusals are
 * RunRefusal codes; the HTTP face parses requests and answers.
 */

import type { Bundle, CompiledWorkflow, JsonObject, Residency } from "../../bundle.ts";
import type { RunStatus, StepRecord } from "../../engine/types.ts";
import { placed, residencyOf, runIdOf } from "../jurisdiction.ts";
import { listRuns, type Position } from "../listing/listing.ts";
import { RunRefusal } from "../refusal.ts";
import type { RunRpc, StartResult } from "../run-rpc.ts";
import { runStub } from "../run-rpc.ts";
import { planRerun } from "./rerun-plan.ts";
import { checkRunInputs, startRun } from "./start-run.ts";

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

export type RerunOutcome = { runId: string; result: StartResult & { outcome: "started" } } | "already";

/**
 * Re-runs the run behind `stub`. `once`: skip it (answer "already") if it was re-run before.
 * Throws the problems of docs/http-api.md (run_not_found, run_active, nothing_to_rerun, unknown_step,
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
    if (source.outcome === "not_found") throw new RunRefusal("run_not_found", "no run with this id");
    throw new RunRefusal("run_active", "the run is still active: cancel it or wait for it to end");
  }
  if (source.status === "complete" && req.from === null) {
    throw new RunRefusal("nothing_to_rerun", 'the run completed: name a step to re-run from ("from")');
  }
  const oldWf = source.def.workflows[source.workflowKey];
  let def = source.def;
  let key = source.workflowKey;
  let wf = oldWf;
  if (req.definition === "current") {
    const now = oldWf ? deployed.lookup(oldWf.name) : null;
    if (!now) throw new RunRefusal("workflow_not_found", "the run's workflow is not deployed any more");
    ({ key, wf } = now);
    def = deployed.bundle;
  }
  if (!wf) throw new RunRefusal("internal_error", "the run's definition is incomplete");
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
    throw new RunRefusal("unknown_step", `no step "${req.from}" in ${wf.name}`, [
      { path: "/from", message: "names no step of the workflow" },
    ]);
  }
  // The re-run is kept where the definition it runs keeps its runs.
  const residency = residencyOf(wf);
  const runId = runIdOf(
    placed(env.RUNS, residency, (ns) => ns.newUniqueId().toString()),
    residency,
  );
  const claim = await stub.rerunStarted(runId, o.once);
  if (claim === "already") return "already";
  if (claim === "not_found") throw new RunRefusal("run_not_found", "no run with this id");
  if (claim === "active") throw new RunRefusal("run_active", "the run is still active");
  const result = await startRun(env, key, wf, {
    runId,
    params,
    request: source.request,
    idempotencyKey: null,
    waitS: o.waitS,
    origin: o.origin,
    definition: req.definition === "pinned" ? source.def : null,
    rerun: { of: oldRunId, reused: plan.reused, arms: armsOf(source.records) },
    // A re-run takes its place in its flow keys like an invoke, but joins no group or batch.
    coalesce: false,
  });
  if (result.outcome !== "started") throw new RunRefusal("internal_error", "the re-run could not start");
  return { runId, result: { ...result, outcome: "started" } };
}

/** The statuses a bulk re-run takes. */
export const RERUNNABLE: readonly RunStatus[] = ["failed", "canceled"];

export interface BulkRerun {
  workflow: string;
  /** The workflow's jurisdiction, where its listing is. */
  residency: Residency | null;
  status: RunStatus;
  /** Created at or after this (epoch ms), or null. */
  since: number | null;
  definition: "pinned" | "current";
  limit: number;
  after: Position | null;
}

/**
 * One page (newest first) of the workflow's listed runs in that status created at or after
 * `since`; each not re-run before is re-run once.
 */
export async function rerunMany(
  env: Env,
  deployed: Deployed,
  q: BulkRerun,
  origin: string,
): Promise<{ runs: Array<{ rerun_of: string; run_id: string }>; next: Position | null }> {
  const page = await listRuns(env, {
    workflow: q.workflow,
    residency: q.residency,
    status: q.status,
    limit: q.limit,
    after: q.after,
  });
  const inWindow = page.runs.filter((r) => q.since === null || Date.parse(r.created_at) >= q.since);
  const outcomes = await Promise.all(
    inWindow.map(async (r) => {
      const stub = runStub(env, r.run_id);
      if (!stub) return null;
      try {
        const done = await rerun(
          env,
          deployed,
          r.run_id,
          stub,
          { from: null, definition: q.definition, params: null },
          { waitS: 0, origin, once: true },
        );
        return done === "already" ? null : { rerun_of: r.run_id, run_id: done.runId };
      } catch (e) {
        // Listed as failed but gone, or not re-runnable any more: nothing to re-run there.
        if (e instanceof RunRefusal && e.code !== "internal_error" && e.code !== "server_misconfigured")
          return null;
        throw e;
      }
    }),
  );
  // Older runs than `since` end the window: no cursor past it.
  const more = page.next !== null && inWindow.length === page.runs.length;
  return {
    runs: outcomes.filter((x): x is { rerun_of: string; run_id: string } => x !== null),
    next: more ? page.next : null,
  };
}

/** The arms the old run's split steps ran (docs/file-format.md, "Variants"): a re-run keeps them. */
function armsOf(records: Array<[string, StepRecord]>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [path, rec] of records) if (rec.variant) out[path] = rec.variant;
  return out;
}
