/**
 * What the Worker reads of a run through its object's RPC, besides the envelope: the view (who
 * may read it, envelope, graph) and what a re-run needs of the run it re-runs.
 */
import type { JsonObject } from "../../bundle.ts";
import type { StepRecord } from "../../engine/types.ts";
import type { RunLifecycle } from "../lifecycle/lifecycle.ts";
import type { RunView } from "../run-calls.ts";
import { runGraph } from "../run-graph.ts";
import type { RerunSource } from "../run-rpc.ts";
import { isFinished } from "../run-store.ts";

/** What the Worker reads to show a run: its workflow's auth (who may read it), envelope and graph. */
export function viewOf(run: RunLifecycle): RunView | null {
  const doc = run.current;
  if (!doc) return null;
  const wf = run.rootWorkflow();
  const view: RunView = { auth: wf.auth, envelope: run.envelope(), graph: runGraph(doc.def, wf) };
  return doc.kept === false ? { ...view, kept: false } : view;
}

/** What a re-run needs of the run it re-runs: its definition, inputs and records, once it has finished. */
export function rerunSourceOf(run: RunLifecycle): RerunSource {
  const doc = run.current;
  if (!doc) return { outcome: "not_found" };
  if (!isFinished(doc)) return { outcome: "active" };
  return {
    outcome: "finished",
    status: doc.status as "complete" | "failed" | "canceled",
    def: doc.def,
    workflowKey: doc.workflow_key,
    params: doc.params as JsonObject,
    request: (doc.request ?? { headers: {} }) as JsonObject,
    records: reusable(run),
  };
}

/**
 * The records a re-run may reuse: a step whose compensation completed was undone, so it runs
 * again (docs/file-format.md, "Compensation"), and so do the steps holding it (a fan-out, a
 * sub-workflow) and what it holds.
 */
function reusable(run: RunLifecycle): Array<[string, StepRecord]> {
  const undone = (run.current?.compensation?.steps ?? [])
    .filter((s) => s.status === "complete")
    .map((s) => s.step);
  if (undone.length === 0) return [...run.stepRecords];
  const gone = (path: string) =>
    undone.some((u) => path === u || path.startsWith(`${u}/`) || u.startsWith(`${path}/`));
  return [...run.stepRecords].filter(([path]) => !gone(path));
}
