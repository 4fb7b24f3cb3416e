/**
 * The run as stored: its document (status, params, times, the pinned definition, the ledger) and
 * the pinning itself, which cuts the deployed bundle down to what one run needs. Secrets never
 * reach it: params and errors are masked before they are recorded.
 */
import type { Bundle, CompiledWorkflow, Json, JsonObject } from "../bundle.ts";
import { newTraceId, type TraceRef } from "../engine/trace.ts";
import type { RunStatus, StepRecord } from "../engine/types.ts";
import type { FlowGate } from "./keys/flow-key-rpc.ts";
import type { QueueReason } from "./keys/flow-key-types.ts";

export interface RunError {
  code: string;
  message: string;
  step: string | null;
}

/** The run as stored (one row). Secrets never reach it: params and errors are masked. */
export interface RunDoc {
  run_id: string;
  /** False: an express run that completed before anything was written keeps no record (memory only). */
  kept?: false;
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
  /** Its search values (`search:` of its workflow, masked; docs/http-api.md, "Search keys"); absent: none. */
  search?: Record<string, string>;
  /** Runs written before flow keys: `invoke.concurrency`'s key object and limit (read as `flow`). */
  concurrency?: { gate: string; limit: number } | null;
  /** The flow keys the run passes (docs/triggers.md, "Shaping bursts"); absent: none. */
  flow?: RunFlow | null;
  /** How many invokes the run stands for (a debounce group's or a batch's size); absent: 1. */
  coalesced?: number;
  /** Runs started as re-runs of this one (so a bulk re-run takes each failed run once). */
  reruns?: string[];
  /**
   * The run's trace (docs/operations.md, "Traces"): its id, the caller's span from a
   * `traceparent` (null: none), and until when its steps' spans were handed over (epoch ms).
   * Absent in runs stored before traces (run-trace.ts derives one from the run id).
   */
  trace?: { id: string; parent: string | null; through?: number };
  /**
   * The compensation phase of a run that ended failed or canceled (docs/file-format.md,
   * "Compensation"): null or absent when nothing was to be undone.
   */
  compensation?: Compensation | null;
  /**
   * Its judged scores (docs/file-format.md, "Scores"), written once its judges have answered (one
   * write), with what they cost; `done`: every judge due has answered (or failed). Absent: none yet.
   */
  judged?: { scores: JudgedScore[]; cost_usd: number; done: boolean };
  /** The arms a re-run keeps for its split steps, by path (docs/file-format.md, "Variants"); absent: none. */
  arms?: Record<string, string>;
  /** A2A push configs of the task (docs/a2a.md, "Push notifications"); absent: none. */
  a2a_push?: PushConfig[];
}

/** A judge's score of a step (its `variant` is the step's, read from its record). */
export interface JudgedScore {
  step: string;
  name: string;
  value: number | null;
  reason: string | null;
  error: string | null;
  at: string;
}

/** One A2A push config of a task (docs/a2a.md): its token and credentials are the caller's, sent as given. */
export interface PushConfig {
  id: string;
  url: string;
  token: string | null;
  authentication: { scheme: string; credentials: string | null } | null;
  created_at: string;
}

/** A run's compensations, in the order they run (latest completion first). */
export interface Compensation {
  status: "running" | "complete" | "failed";
  steps: CompensationStep[];
}

export interface CompensationStep {
  /** The compensated step's path (a fan-out item's `<step>/<index>`). */
  step: string;
  status: "pending" | "running" | "complete" | "failed";
  attempts: number;
  error: { code: string; message: string } | null;
  started_at: string | null;
  finished_at: string | null;
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
      // A compensation run as a sub-workflow is part of what the run may need.
      if (s.compensate?.workflow) visit(s.compensate.workflow.key);
      // The agents it may call: its own, its arms' (variants) and its judges' (scores).
      const keys = [
        ...(s.kind === "agent"
          ? [s.agent, ...(s.variants?.arms ?? []).flatMap((a) => (a.agent ? [a.agent] : []))]
          : []),
        ...(s.score ?? []).flatMap((x) => (x.judge ? [x.judge.agent] : [])),
      ];
      for (const key of keys) {
        const a = bundle.agents[key];
        if (a) agents[key] = a;
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

/** A run's way through its flow keys (flow-gates.ts makes it, the keys' answers move it on). */
export interface RunFlow {
  gates: FlowGate[];
  /** The key the run waits at: every key before it said go (`gates.length`: it may start). */
  at: number;
  /** The key at `at` knows the run (it asks `turn`, not `admit`). */
  admitted: boolean;
  /** -100..100, what the keys order their queues by. */
  priority: number;
  /** Keys where only the run's `cancel_on` lives. */
  watches: string[];
  /** Why it waits and when it is expected to start, as its key last said. */
  reason: QueueReason | null;
  startsAt: number | null;
}

/** What a new run is started from (its admission verdict made: `flow`). */
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
  /** A re-run: the run it re-runs, and the records it reuses from it (see start/rerun-plan.ts). */
  rerun?: { of: string; reused: Array<[string, StepRecord]>; arms?: Record<string, string> } | null;
  /** Its flow keys, and how far it got through them at its invoke (`at < gates.length`: queued). */
  flow?: RunFlow | null;
  /** The trace the run belongs to (run-trace.ts, `newTrace`); absent: a new one. */
  trace?: { id: string; parent: string | null } | null;
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
    status: req.flow && req.flow.at < req.flow.gates.length ? "queued" : "pending",
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
  doc.trace = req.trace ? { id: req.trace.id, parent: req.trace.parent } : { id: newTraceId(), parent: null };
  if (req.rerun) doc.rerun_of = req.rerun.of;
  if (req.flow) doc.flow = req.flow;
  return doc;
}

/** The trace of a run: the one it was created in, or (a run stored before traces) one from its id. */
export function traceOf(doc: RunDoc): TraceRef {
  return doc.trace ?? { id: doc.run_id.slice(-32), parent: null };
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

/**
 * The run's flow keys (a run written before flow keys has only `concurrency`: its one key). Null
 * when it passes none.
 */
export function flowOf(doc: RunDoc): RunFlow | null {
  if (doc.flow) return doc.flow;
  const cc = doc.concurrency;
  if (!cc) return null;
  const gate: FlowGate = {
    name: cc.gate,
    settings: {
      throttle: null,
      debounce: null,
      batch: null,
      concurrency: { limit: cc.limit, onFull: "queue" },
    },
    cancelOn: [],
  };
  doc.flow = {
    gates: [gate],
    at: doc.status === "queued" ? 0 : 1,
    admitted: true,
    priority: 0,
    watches: [],
    reason: doc.status === "queued" ? "concurrency" : null,
    startsAt: null,
  };
  return doc.flow;
}

/**
 * Every key that may hold something of the run, what it gives back at its end: a concurrency slot,
 * a `cancel_on` watch, a place in a queue it has not passed. A key it only passed (a throttle
 * window counts the start and forgets the run; a debounce group or batch goes when its run begins)
 * holds nothing.
 */
export function flowKeys(flow: RunFlow | null): string[] {
  if (!flow) return [];
  const held = flow.gates.filter(
    (g, i) => i >= flow.at || g.settings.concurrency !== null || g.cancelOn.length > 0,
  );
  return [...new Set([...held.map((g) => g.name), ...flow.watches])];
}
