/**
 * Runtime shapes shared by the engine, the step executors and the run Durable Object:
 * step records (what the envelope shows and storage keeps), the step error type with its
 * closed list of codes, and the context an executor gets. No Worker APIs here.
 */
import type { Bundle, CompiledWorkflow, Json, JsonObject } from "../bundle.ts";
import type { Clock } from "./clock.ts";

export type StepStatus = "pending" | "running" | "complete" | "failed" | "skipped" | "canceled";
export type RunStatus = "pending" | "running" | "complete" | "failed" | "canceled";

/** Every error code a step or a run can end with (README has the table). */
export const STEP_ERROR_CODES = [
  "expression_error",
  "invalid_input",
  "output_schema_mismatch",
  "output_too_large",
  "webhook_failed",
  "agent_failed",
  "budget_exceeded",
  "fanout_failed",
  "too_many_items",
  "timeout",
  "canceled",
  "internal_error",
  // Only in workflow tests (npm run test:workflows): a webhook or agent step without a mock.
  "unmocked_step",
] as const;
export type StepErrorCode = (typeof STEP_ERROR_CODES)[number];

/** Thrown by executors; the engine records `{code, message}` (masked) on the step. */
export class StepError extends Error {
  readonly code: StepErrorCode;
  /** Slash path of the failing step inside a sub-workflow, relative to this step (e.g. `post`). */
  readonly subPath: string | null;
  constructor(code: StepErrorCode, message: string, subPath: string | null = null) {
    super(message);
    this.name = "StepError";
    this.code = code;
    this.subPath = subPath;
  }
}

export interface StepMetrics {
  duration_ms: number;
  tokens_in: number;
  tokens_out: number;
  cost_usd: number;
  llm_calls: number;
  attempts: number;
}

export function emptyMetrics(): StepMetrics {
  return { duration_ms: 0, tokens_in: 0, tokens_out: 0, cost_usd: 0, llm_calls: 0, attempts: 0 };
}

export interface StepRecord {
  id: string;
  status: StepStatus;
  output: Json;
  error: { code: string; message: string } | null;
  started_at: string | null;
  finished_at: string | null;
  metrics: StepMetrics;
  /** Child step records of a workflow step, or the started items of a fan-out ([] otherwise). */
  steps: StepRecord[];
}

/** What `condition`, `{{ }}` and transform `from` see. `step` holds only the step's ancestors. */
export interface EvalScope {
  params: Json;
  env: JsonObject;
  step: JsonObject;
  /** The root workflow's recorded request (`{headers}`); absent inside sub-workflows. */
  request?: Json;
  /** Inside one item of a fan-out (`for_each`): the item and its index; absent elsewhere. */
  item?: Json;
  item_index?: number;
}

/**
 * A per-run cost ledger (sub-workflows get a child ledger whose cap is the smaller of the
 * parent's remainder and their own budget). All amounts in USD.
 */
export interface BudgetLedger {
  /** null: unlimited. */
  readonly capUsd: number | null;
  /**
   * Reserves `worstCaseUsd`. Waits while other reservations are outstanding if it does not fit;
   * throws StepError("budget_exceeded") when it cannot fit once they have settled.
   */
  reserve(worstCaseUsd: number, signal: AbortSignal): Promise<BudgetReservation>;
}

export interface BudgetReservation {
  /** Replaces the reservation by the actual cost (may be 0 when the call failed unsent). */
  settle(actualUsd: number): void;
}

/** What every step executor receives. */
export interface StepContext {
  bundle: Bundle;
  runId: string;
  /** Slash path of the step inside the run, e.g. `notify/post`. Used in idempotency keys. */
  path: string;
  workflow: CompiledWorkflow;
  scope: EvalScope;
  /** Aborted at the deadline, on cancel, or when the run fails. */
  signal: AbortSignal;
  /** Epoch ms. Nothing (retries, back-off) may go past it. */
  deadline: number;
  /** The Worker's environment as strings (secrets, provider keys, ALLOW_PRIVATE_WEBHOOKS). */
  env: Record<string, string | undefined>;
  /** Outbound fetch, limited to 6 concurrent requests per run. */
  fetch: (input: string | Request, init?: RequestInit) => Promise<Response>;
  /** Mutable: executors add tokens, cost, llm_calls and attempts as they go. */
  metrics: StepMetrics;
  budget: BudgetLedger;
  /** Optional Workers AI binding (gateway providers of type workers-ai). */
  ai?: { run(model: string, input: unknown, options?: unknown): Promise<unknown> };
  /** Time and timers (retries, back-offs, signature timestamps); default the system clock. */
  clock?: Clock;
}

export type StepExecutor<S> = (step: S, ctx: StepContext) => Promise<Json>;
