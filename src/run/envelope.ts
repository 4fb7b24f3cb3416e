/**
 * The run envelope (docs/http-api.md): what GET /runs/{id} returns. Built from the run document
 * and the step records by walking the pinned definition, so steps come in pipeline order, child
 * steps nest under their workflow step, and every key is always present.
 */
import { type Bundle, type CompiledWorkflow, isFanOut, type Json } from "../bundle.ts";
import { addUsd } from "../engine/budget.ts";
import { fanOutItemIndices } from "../engine/fan-out.ts";
import { pendingRecord } from "../engine/step-records.ts";
import type { RunStatus, StepRecord } from "../engine/types.ts";
import { type Compensation, type RunDoc, type RunError, traceOf } from "./run-doc.ts";

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
    /** What its judges cost, outside its budget (docs/file-format.md, "Scores"). */
    scores_cost_usd: number;
  };
  /** Every score of the run: `expr` scores as their steps completed, judged ones once written. */
  scores: Array<{
    step: string;
    name: string;
    value: number | null;
    reason: string | null;
    variant: string | null;
    error: string | null;
    at: string;
  }>;
  budget_usd: number | null;
  /** How many invokes the run stands for: 1, or its debounce group's or batch's size. */
  coalesced: number;
  /** While it is queued: why it waits (concurrency, throttle, debounce, batch) and when it is expected to start. */
  queue: { reason: string; starts_at: string | null } | null;
  /** Its deliveries (notifications, approval requests) and their states; [] when none. */
  deliveries: Array<{ id: string; type: string; state: string }>;
  /** Its compensation phase (docs/file-format.md, "Compensation"); null when nothing was to be undone. */
  compensation: Compensation | null;
  /** The run's trace id (32 lower-case hex digits). */
  trace_id: string;
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

/** A step record as the envelope shows it: every key present, in the documented order (docs/http-api.md) (older records lack some). */
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
    variant: rec.variant ?? null,
  };
}

export function buildEnvelope(
  doc: RunDoc,
  records: ReadonlyMap<string, StepRecord>,
  now: number,
  deliveries: Envelope["deliveries"] = [],
): Envelope {
  const wf = doc.def.workflows[doc.workflow_key];
  if (!wf) throw new Error(`run ${doc.run_id}: workflow ${doc.workflow_key} missing from its definition`);
  const steps = nest(doc.def, wf, "", records);
  const totals = {
    duration_ms: 0,
    tokens_in: 0,
    tokens_out: 0,
    cost_usd: 0,
    llm_calls: 0,
    tool_calls: 0,
    scores_cost_usd: doc.judged?.cost_usd ?? 0,
  };
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
    scores: scoresOf(doc, records),
    budget_usd: wf.policy.costBudgetUsd,
    coalesced: doc.coalesced ?? 1,
    queue: queueOf(doc),
    deliveries,
    compensation: doc.compensation ?? null,
    trace_id: traceOf(doc).id,
    deadline: doc.deadline,
    created_at: doc.created_at,
    finished_at: doc.finished_at,
  };
}

/** Why a queued run waits and when it is expected to start, as its flow key last said (null: not queued). */
function queueOf(doc: RunDoc): Envelope["queue"] {
  if (doc.status !== "queued") return null;
  const flow = doc.flow;
  const reason = flow?.reason ?? (doc.concurrency ? "concurrency" : null);
  if (!reason) return null;
  const at = flow?.startsAt ?? null;
  return { reason, starts_at: at === null ? null : new Date(at).toISOString() };
}

/** The run's scores: each step's `expr` scores (records in path order), then the judged ones. */
function scoresOf(doc: RunDoc, records: ReadonlyMap<string, StepRecord>): Envelope["scores"] {
  const out: Envelope["scores"] = [];
  for (const [step, rec] of records)
    for (const s of rec.scores ?? []) out.push({ step, ...s, variant: rec.variant ?? null });
  for (const s of doc.judged?.scores ?? []) out.push({ ...s, variant: records.get(s.step)?.variant ?? null });
  return out;
}
