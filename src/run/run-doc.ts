/**
 * The run as stored: its document (status, params, times, the pinned definition, the ledger) and
 * the pinning itself, which cuts the deployed bundle down to what one run needs. Secrets never
 * reach it: params and errors are masked before they are recorded.
 */
import type { Bundle, CompiledWorkflow, Json, JsonObject } from "../bundle.ts";
import type { RunStatus, StepRecord } from "../engine/types.ts";

export interface RunError {
  code: string;
  message: string;
  step: string | null;
}

/** The run as stored (one row). Secrets never reach it: params and errors are masked. */
export interface RunDoc {
  run_id: string;
  /** Key of the root workflow in `def.workflows`. */
  workflow_key: string;
  status: RunStatus;
  error: RunError | null;
  params: Json;
  /** `{headers}`: the declared request headers as recorded (masked); absent in older runs. */
  request?: Json;
  created_at: string;
  deadline: string;
  finished_at: string | null;
  /** Hash of the canonical JSON of the invoke body, for Idempotency-Key replays. */
  body_hash: string | null;
  idempotency_key: string | null;
  /** The compiled definition the run is pinned to (root, its sub-workflows, agents, gateway). */
  def: Bundle;
  /** Budget ledger state (reservations are persisted with the run). */
  ledger: Json;
  /** Origin of the invoke that started the run (approvals' `decide_url`); absent in older runs. */
  origin?: string | null;
  /** The run this one re-runs (docs/http-api.md, "Re-runs"); absent for a plain invoke. */
  rerun_of?: string | null;
  /** `invoke.concurrency`: the key's object (`<workflow>\n<key>`) and the limit (docs/triggers.md). */
  concurrency?: { gate: string; limit: number } | null;
  /** Runs started as re-runs of this one (so a bulk re-run takes each failed run once). */
  reruns?: string[];
}

/** The slice of the bundle a run needs: its workflow, every sub-workflow it reaches, their agents. */
export function pinDefinition(bundle: Bundle, rootKey: string): Bundle {
  const workflows: Bundle["workflows"] = {};
  const agents: Bundle["agents"] = {};
  const visit = (key: string) => {
    const wf = bundle.workflows[key];
    if (!wf || workflows[key]) return;
    workflows[key] = wf;
    for (const s of wf.steps) {
      if (s.kind === "workflow") visit(s.workflow);
      if (s.kind === "agent") {
        const a = bundle.agents[s.agent];
        if (a) agents[s.agent] = a;
      }
    }
  };
  visit(rootKey);
  return {
    format: bundle.format,
    hash: bundle.hash,
    workflows,
    invocable: {},
    agents,
    gateway: bundle.gateway,
  };
}

/** What a new run is started from (its admission verdict made: `concurrency.queued`). */
export interface StartRun {
  runId: string;
  /** The deployed bundle; the run pins its own slice of it. */
  bundle: Bundle;
  workflowKey: string;
  params: JsonObject;
  request: JsonObject;
  bodyHash: string | null;
  idempotencyKey: string | null;
  origin: string | null;
  /** A re-run: the run it re-runs, and the records it reuses from it (see rerun.ts). */
  rerun?: { of: string; reused: Array<[string, StepRecord]> } | null;
  /** `invoke.concurrency`: the run's key; `queued` when admission found no free slot. */
  concurrency?: { gate: string; limit: number; queued: boolean } | null;
}

/**
 * A new run's document, pinned to its own slice of `req.bundle`, created at `now`. A queued run
 * has not started: its deadline is set again when it begins. Params are masked by the caller.
 */
export function newRunDoc(req: StartRun, now: number): RunDoc {
  const def = pinDefinition(req.bundle, req.workflowKey);
  const wf = workflowOf(def, req.workflowKey);
  const doc: RunDoc = {
    run_id: req.runId,
    workflow_key: req.workflowKey,
    status: req.concurrency?.queued ? "queued" : "pending",
    error: null,
    params: req.params,
    request: req.request,
    created_at: new Date(now).toISOString(),
    deadline: new Date(now + wf.policy.timeoutS * 1000).toISOString(),
    finished_at: null,
    body_hash: req.bodyHash,
    idempotency_key: req.idempotencyKey,
    def,
    ledger: { spent: 0, outstanding: {} },
    origin: req.origin,
  };
  if (req.rerun) doc.rerun_of = req.rerun.of;
  if (req.concurrency) doc.concurrency = { gate: req.concurrency.gate, limit: req.concurrency.limit };
  return doc;
}

/** The workflow `key` of a definition (a run's pinned one, or the bundle). */
export function workflowOf(def: Bundle, key: string): CompiledWorkflow {
  const wf = def.workflows[key];
  if (!wf) throw new Error(`workflow ${key} is missing from the run's definition`);
  return wf;
}

/**
 * Notes that run `runId` re-runs this finished run (`claimed`: the caller writes the document);
 * with `once`, a run re-run before is `already` taken (a bulk re-run takes each run once).
 */
export function noteRerun(doc: RunDoc, runId: string, once: boolean): "claimed" | "already" | "active" {
  if (!["complete", "failed", "canceled"].includes(doc.status)) return "active";
  if (once && (doc.reruns?.length ?? 0) > 0) return "already";
  // The latest few are enough to know it was re-run (and to follow it up by hand).
  doc.reruns = [...(doc.reruns ?? []), runId].slice(-20);
  return "claimed";
}
