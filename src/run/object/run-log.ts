/**
 * The one log line a finished run writes (Workers Logs / Logpush, `[observability]` in
 * wrangler.toml): a flat JSON object so that the dashboard's query builder can filter on every
 * field (`$metadata` aside, Workers Logs indexes the keys of a JSON `console.log` line). It holds
 * no params, outputs or messages, only ids, codes and numbers; the caller still masks it like
 * every value that leaves a run.
 */
import type { Json } from "../../bundle.ts";
import { addUsd } from "../../engine/budget.ts";
import type { StepRecord, StepStatus } from "../../engine/types.ts";
import type { RunDoc } from "../run-doc.ts";

export interface FinishedRunLog {
  [key: string]: Json;
  event: "run.finished";
  run_id: string;
  workflow: string;
  workflow_version: string | null;
  status: string;
  error_code: string | null;
  error_step: string | null;
  duration_ms: number;
  cost_usd: number;
  tokens_in: number;
  tokens_out: number;
  llm_calls: number;
  /** Top-level pipeline steps by final status, and how many there are. */
  steps: { total: number } & Partial<Record<StepStatus, number>>;
  created_at: string;
  finished_at: string | null;
  /** The run's trace (docs/operations.md, "Traces"). */
  trace_id: string;
  /** Spans its export dropped so far, after EXPORT_RETRIES failed tries (0 when none). */
  spans_dropped: number;
}

/** A `trace.dropped` line: spans of a run dropped after its `run.finished` line was written. */
export function droppedSpansLog(runId: string, traceId: string, spans: number) {
  return { event: "trace.dropped", run_id: runId, trace_id: traceId, spans_dropped: spans };
}

/** `records` are the run's final step records by slash path (top-level paths have no `/`). */
export function finishedRunLog(
  doc: RunDoc,
  workflow: { name: string; version: string | null },
  records: ReadonlyMap<string, StepRecord>,
  trace: { id: string; dropped: number },
): FinishedRunLog {
  const steps: FinishedRunLog["steps"] = { total: 0 };
  let cost = 0;
  let tokensIn = 0;
  let tokensOut = 0;
  let llmCalls = 0;
  for (const [path, rec] of records) {
    // A workflow step's metrics already sum its children's, so only top-level steps count.
    if (path.includes("/")) continue;
    steps.total += 1;
    steps[rec.status] = (steps[rec.status] ?? 0) + 1;
    cost = addUsd(cost, rec.metrics.cost_usd);
    tokensIn += rec.metrics.tokens_in;
    tokensOut += rec.metrics.tokens_out;
    llmCalls += rec.metrics.llm_calls;
  }
  const end = doc.finished_at ? Date.parse(doc.finished_at) : Date.now();
  return {
    event: "run.finished",
    run_id: doc.run_id,
    workflow: workflow.name,
    workflow_version: workflow.version,
    status: doc.status,
    error_code: doc.error?.code ?? null,
    error_step: doc.error?.step ?? null,
    duration_ms: Math.max(0, end - Date.parse(doc.created_at)),
    cost_usd: cost,
    tokens_in: tokensIn,
    tokens_out: tokensOut,
    llm_calls: llmCalls,
    steps,
    created_at: doc.created_at,
    finished_at: doc.finished_at,
    trace_id: trace.id,
    spans_dropped: trace.dropped,
  };
}
