/**
 * What the Worker reads of a run through its object's RPC, besides the envelope: the view (who
 * may read it, envelope, graph; a queued group's as it stands), the event an invoke's own stream
 * opens with, and what a re-run needs of the run it re-runs.
 */
import type { JsonObject } from "../../bundle.ts";
import type { StepRecord } from "../../engine/types.ts";
import type { RunEvent } from "../events/events.ts";
import type { FlowKeyRpc } from "../keys/flow-key-rpc.ts";
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

/**
 * A queued debounce or batch run shows its group as it stands (docs/triggers.md, "Shaping
 * bursts"): the params it will begin with, how many invokes it stands for and when it is due,
 * which its flow key (reached through `key`) holds until it begins; read when asked, no row written.
 */
export async function withGroup(
  run: RunLifecycle,
  view: RunView,
  key: (gate: string) => FlowKeyRpc,
): Promise<RunView> {
  const doc = run.current;
  const reason = view.envelope.queue?.reason;
  const gate = doc?.flow?.gates[doc.flow.at];
  if (!doc || view.envelope.status !== "queued" || !gate || (reason !== "debounce" && reason !== "batch"))
    return view;
  const group = await key(gate.name)
    .group(doc.run_id)
    .catch(() => null);
  if (!group) return view;
  const queue = { reason, starts_at: new Date(group.due).toISOString() };
  const params = run.runMasker.maskJson(group.params);
  return { ...view, envelope: { ...view.envelope, params, coalesced: group.coalesced, queue } };
}

/** `run.started` (`run.queued` for a queued run): what an invoke's own event stream opens with (docs/http-api.md, "Streaming"). */
export function openingEvent(run: RunLifecycle): RunEvent | undefined {
  const doc = run.current;
  if (!doc) return undefined;
  return {
    type: doc.status === "queued" ? "run.queued" : "run.started",
    time: doc.created_at,
    data: { run_id: doc.run_id, workflow: run.rootWorkflow().name, trace_id: run.envelope().trace_id },
  };
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
