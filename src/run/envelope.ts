/**
 * The run envelope (SPEC section 4): what GET /runs/{id} returns. Built from the run document
 * and the step records by walking the pinned definition, so steps come in pipeline order, child
 * steps nest under their workflow step, and every key is always present.
 */
import {
  type Bundle,
  type CompiledStep,
  type CompiledWorkflow,
  type ForEach,
  forEachOf,
  isFanOut,
  type Json,
} from "../bundle.ts";
import { addUsd } from "../engine/budget.ts";
import { fanOutItemIndices } from "../engine/fan-out.ts";
import { pendingRecord } from "../engine/scheduler.ts";
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
  /** The run this one re-runs (SPEC 12); absent for a plain invoke. */
  rerun_of?: string | null;
  /** `invoke.concurrency`: the key's object (`<workflow>\n<key>`) and the limit (SPEC 13). */
  concurrency?: { gate: string; limit: number } | null;
  /** Runs started as re-runs of this one (so a bulk re-run takes each failed run once). */
  reruns?: string[];
}

export interface Envelope {
  run_id: string;
  /** The run this one re-runs, or null. */
  rerun_of: string | null;
  workflow: string;
  workflow_version: string | null;
  status: RunStatus;
  error: RunError | null;
  params: Json;
  steps: StepRecord[];
  request: Json;
  output: Json;
  totals: {
    duration_ms: number;
    tokens_in: number;
    tokens_out: number;
    cost_usd: number;
    llm_calls: number;
    /** Tool calls made by the run's agent steps (the sum of the steps' `metrics.tool_calls`). */
    tool_calls: number;
  };
  budget_usd: number | null;
  deadline: string;
  created_at: string;
  finished_at: string | null;
}

function nest(
  def: Bundle,
  wf: CompiledWorkflow,
  prefix: string,
  records: ReadonlyMap<string, StepRecord>,
): StepRecord[] {
  return wf.steps.map((s) => {
    const path = prefix + s.id;
    const rec = records.get(path) ?? pendingRecord(s.id);
    const child = s.kind === "workflow" ? def.workflows[s.workflow] : undefined;
    if (isFanOut(s)) {
      // One record per started item; a workflow item holds its child's steps.
      const items = fanOutItemIndices(records, path).map((i) => {
        const item = records.get(`${path}/${i}`) as StepRecord;
        return full(item, child ? nest(def, child, `${path}/${i}/`, records) : []);
      });
      return full(rec, items);
    }
    return full(rec, child ? nest(def, child, `${path}/`, records) : []);
  });
}

/** A step record as the envelope shows it: every key present, in SPEC's order (older records lack some). */
function full(rec: StepRecord, steps: StepRecord[]): StepRecord {
  return {
    id: rec.id,
    status: rec.status,
    output: rec.output,
    error: rec.error,
    started_at: rec.started_at,
    finished_at: rec.finished_at,
    metrics: { ...rec.metrics, tool_calls: rec.metrics.tool_calls ?? 0 },
    tool_calls: rec.tool_calls ?? [],
    annotations: rec.annotations ?? null,
    steps,
    reused_from: rec.reused_from ?? null,
  };
}

export function buildEnvelope(doc: RunDoc, records: ReadonlyMap<string, StepRecord>, now: number): Envelope {
  const wf = doc.def.workflows[doc.workflow_key];
  if (!wf) throw new Error(`run ${doc.run_id}: workflow ${doc.workflow_key} missing from its definition`);
  const steps = nest(doc.def, wf, "", records);
  const totals = { duration_ms: 0, tokens_in: 0, tokens_out: 0, cost_usd: 0, llm_calls: 0, tool_calls: 0 };
  for (const s of steps) {
    // A reused step's work was paid for by the run it executed in.
    if (s.reused_from) continue;
    // Workflow steps already carry the sum of their children (reused ones left out).
    totals.tokens_in += s.metrics.tokens_in;
    totals.tokens_out += s.metrics.tokens_out;
    totals.cost_usd = addUsd(totals.cost_usd, s.metrics.cost_usd);
    totals.llm_calls += s.metrics.llm_calls;
    totals.tool_calls += s.metrics.tool_calls ?? 0;
  }
  const end = doc.finished_at ? Date.parse(doc.finished_at) : now;
  totals.duration_ms = Math.max(0, end - Date.parse(doc.created_at));
  return {
    run_id: doc.run_id,
    rerun_of: doc.rerun_of ?? null,
    workflow: wf.name,
    workflow_version: wf.version,
    status: doc.status,
    error: doc.error,
    params: doc.params,
    steps,
    request: doc.request ?? { headers: {} },
    // The last listed step's output, read from its record (not stored twice: a run row holding
    // params, definition and a copy of a 1 MiB output could pass the storage row limit).
    output: doc.status === "complete" ? (steps[steps.length - 1]?.output ?? null) : null,
    totals,
    budget_usd: wf.policy.costBudgetUsd,
    deadline: doc.deadline,
    created_at: doc.created_at,
    finished_at: doc.finished_at,
  };
}

export interface GraphNode {
  /** Slash path, e.g. `notify/post`. */
  path: string;
  id: string;
  kind: CompiledStep["kind"];
  /** Paths of the direct dependencies (same pipeline). */
  deps: string[];
  /** Path of the enclosing workflow step, or null at the top level. */
  parent: string | null;
  condition: string | null;
  /** A wait step's wait: the signal it waits for (or null for a sleep), or null for other kinds. */
  wait: { signal: string | null; keyed: boolean; timeout_s: number | null; for_s: number | null } | null;
  /** The step's `for_each` (its items are records under its path, not graph nodes), or null. */
  for_each: {
    from: string;
    concurrency: number | null;
    max_items: number | null;
    max_failures: number;
  } | null;
}

function forEachGraph(f: ForEach | null): GraphNode["for_each"] {
  return (
    f && { from: f.from, concurrency: f.concurrency, max_items: f.maxItems, max_failures: f.maxFailures }
  );
}

/** The dependency graph of a run's pinned definition, for the viewer. */
export function runGraph(
  def: Bundle,
  wf: CompiledWorkflow,
  prefix = "",
  parent: string | null = null,
): GraphNode[] {
  const nodes: GraphNode[] = [];
  for (const s of wf.steps) {
    const path = prefix + s.id;
    nodes.push({
      path,
      id: s.id,
      kind: s.kind,
      deps: s.deps.map((d) => prefix + d),
      parent,
      condition: s.condition,
      wait:
        s.kind === "wait"
          ? {
              signal: s.signal?.name ?? null,
              keyed: s.signal?.key != null,
              timeout_s: s.signal?.timeoutS ?? null,
              for_s: s.forS,
            }
          : null,
      for_each: forEachGraph(forEachOf(s)),
    });
    const child = s.kind === "workflow" && !s.forEach ? def.workflows[s.workflow] : undefined;
    if (child) nodes.push(...runGraph(def, child, `${path}/`, path));
  }
  return nodes;
}

/**
 * Visits every step of `wf` and of its sub-workflows, parents first, in pipeline order. Fan-out
 * items exist only as records: with `records`, the started items of each fan-out step (and a
 * workflow item's child steps) are visited after the step, in index order.
 */
export function forEachStepPath(
  def: Bundle,
  wf: CompiledWorkflow,
  visit: (path: string, id: string) => void,
  prefix = "",
  records?: ReadonlyMap<string, StepRecord>,
) {
  for (const s of wf.steps) {
    const path = prefix + s.id;
    visit(path, s.id);
    const child = s.kind === "workflow" ? def.workflows[s.workflow] : undefined;
    if (isFanOut(s)) {
      if (!records) continue;
      for (const i of fanOutItemIndices(records, path)) {
        visit(`${path}/${i}`, String(i));
        if (child) forEachStepPath(def, child, visit, `${path}/${i}/`, records);
      }
    } else if (child) {
      forEachStepPath(def, child, visit, `${path}/`, records);
    }
  }
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

/** Every step record path of a run, fan-out items included (see forEachStepPath). */
export function forEachRecordPath(
  def: Bundle,
  wf: CompiledWorkflow,
  records: ReadonlyMap<string, StepRecord>,
  visit: (path: string, id: string) => void,
) {
  forEachStepPath(def, wf, visit, "", records);
}
