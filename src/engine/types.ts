/**
 * Runtime shapes shared by the engine, the step executors and the run Durable Object:
 * step records (what the envelope shows and storage keeps), the step error type with its
 * closed list of codes, and the context an executor gets. No Worker APIs here.
 */
import type { Bundle, CompiledWorkflow, Json, JsonObject } from "../bundle.ts";
import type { Clock } from "./clock.ts";
import type { StepTracer } from "./trace.ts";

/**
 * `pending_approval`: an agent step waiting for a human decision (docs/agents-and-tools.md); `waiting`: a wait step
 * waiting for its signal or the end of its sleep (docs/file-format.md). The run stays `running`.
 */
export type StepStatus =
  | "pending"
  | "running"
  | "pending_approval"
  | "waiting"
  | "complete"
  | "failed"
  | "skipped"
  | "canceled";
export type RunStatus = "queued" | "pending" | "running" | "complete" | "failed" | "canceled";

/** Every error code a step or a run can end with (docs/errors-and-limits.md has the table). */
export const STEP_ERROR_CODES = [
  "expression_error",
  "invalid_input",
  "output_schema_mismatch",
  "output_too_large",
  // A webhook's JSON answer nests deeper than the invoke body may (docs/errors-and-limits.md).
  "response_too_deep",
  "webhook_failed",
  "agent_failed",
  "budget_exceeded",
  "fanout_failed",
  "too_many_items",
  "timeout",
  "canceled",
  "internal_error",
  // Agents with tools, approvals and output contracts (docs/agents-and-tools.md).
  "tool_not_permitted",
  "tool_failed",
  // A tool server's OAuth grant was refused (docs/agents-and-tools.md, "OAuth").
  "tool_auth_failed",
  "max_turns_exceeded",
  "approval_rejected",
  "approval_timeout",
  "injection_detected",
  "untrusted_content",
  "low_quality",
  "low_confidence",
  "human_rejected",
  // The wait step (docs/file-format.md): its signal did not come within timeout_s.
  "wait_timeout",
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

/**
 * Error codes that end the whole run whatever tolerates step failures around it (docs/agents-and-tools.md: an
 * injection attempt fails the run at once; a fan-out's `max_failures` must not absorb it).
 */
export const RUN_FATAL_CODES: ReadonlySet<string> = new Set(["injection_detected"]);

/**
 * Thrown by an executor whose step ends `skipped` rather than `complete` (an agent's
 * `ktsu_skip_reason`): the step's output becomes `{"skipped": true, "reason": reason}`.
 */
export class StepSkipped extends Error {
  readonly reason: string;
  constructor(reason: string) {
    super(`skipped: ${reason}`);
    this.name = "StepSkipped";
    this.reason = reason;
  }
}

export interface StepMetrics {
  duration_ms: number;
  tokens_in: number;
  tokens_out: number;
  cost_usd: number;
  llm_calls: number;
  attempts: number;
  /** Tool calls made (or refused, rejected, timed out) by an agent step; 0 for other steps. */
  tool_calls: number;
}

export function emptyMetrics(): StepMetrics {
  return {
    duration_ms: 0,
    tokens_in: 0,
    tokens_out: 0,
    cost_usd: 0,
    llm_calls: 0,
    attempts: 0,
    tool_calls: 0,
  };
}

/** One tool call of an agent step, as the step record shows it (masked). docs/agents-and-tools.md. */
export interface ToolCallRecord {
  /** The agent's name for the server (`servers[].name`). */
  server: string;
  /** The tool's name on its server. */
  name: string;
  arguments: Json;
  /** What the tool returned: its `structuredContent`, else its text content; null on error. */
  result: Json;
  error: string | null;
  started_at: string;
  finished_at: string | null;
  /** The approval that gated the call, or null for a call that needed none. */
  approval: { id: string; status: ApprovalStatus; comment: string | null } | null;
}

/** `ktsu_flags`, `ktsu_rationale`, `ktsu_confidence` of an agent's final output. docs/agents-and-tools.md. */
export interface Annotations {
  flags: string[];
  rationale: string | null;
  confidence: number | null;
}

export type ApprovalStatus = "pending" | "approved" | "rejected" | "timeout";

export interface StepRecord {
  id: string;
  status: StepStatus;
  output: Json;
  error: { code: string; message: string } | null;
  started_at: string | null;
  finished_at: string | null;
  metrics: StepMetrics;
  /** An agent step's tool calls ([] for other steps). */
  tool_calls: ToolCallRecord[];
  /** An agent step's reserved annotations, or null. */
  annotations: Annotations | null;
  /** Child step records of a workflow step, or the started items of a fan-out ([] otherwise). */
  steps: StepRecord[];
  /**
   * A re-run (docs/http-api.md) kept this record from an earlier run instead of executing the step: the
   * id of the run in which the step actually executed. Absent or null on steps that ran.
   */
  reused_from?: string | null;
  /** The arm of a step with `variants` (docs/file-format.md, "Variants"); absent or null: none. */
  variant?: string | null;
  /** The step's `expr` scores, as it completed (docs/file-format.md, "Scores"); absent: none. */
  scores?: StepScore[];
}

/** One score of a step, as its record keeps it (docs/file-format.md, "Scores"). */
export interface StepScore {
  name: string;
  value: number | null;
  reason: string | null;
  error: string | null;
  at: string;
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
  /** In a compensation only: the step's (or the fan-out item's) output, and the run's error. */
  output?: Json;
  error?: Json;
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
  /** Whether `text` holds a secret of the run (in any form masking knows). */
  holdsSecret?(text: string): boolean;
  /** The step record's tool calls: an agent step appends to it as calls happen. */
  toolCalls?: ToolCallRecord[];
  /** Sets the step record's annotations (null: the output has none). */
  annotate?(annotations: Annotations | null): void;
  /** Connections to MCP tool servers (the run's real client, or a test's mocks). */
  tools?: ToolHost;
  /** Where a step asks a human (durable in the run object; in-memory in tests). */
  approvals?: ApprovalHost;
  /** The step's own resumable state (an agent's conversation), persisted by the run. */
  checkpoint?: StepCheckpoint;
  /** Where a wait step waits (durable in the run object; on the virtual clock in tests). */
  waits?: WaitHost;
  /** Client spans of the step's outbound requests, and their `traceparent` (engine/trace.ts). */
  trace?: StepTracer;
  /**
   * Where a streaming agent step's answer goes as it is generated (docs/agents-and-tools.md,
   * "Streaming"): masked and shown to live listeners, never stored. Absent: nobody streams it.
   */
  stream?: OutputStream;
}

/** A step's text as it is generated: each chunk, a reset (what came is void), the end of one answer. */
export interface OutputStream {
  text(chunk: string): void;
  reset(): void;
  end(): void;
}

// ---- Tools, approvals, checkpoints: what an executor asks the run for -----------------------

/** What a step needs to reach one tool server; `url` and `headers` are rendered (secrets inside). */
export interface ToolServerTarget {
  /** The step's slash path (mocks are keyed `<path>/tools/<tool>`). */
  path: string;
  /** The agent's name for the server. */
  server: string;
  url: string;
  /** Auth header(s) for every request to the server. */
  headers: Record<string, string>;
  /** `auth: {scheme: oauth}` (docs/agents-and-tools.md, "OAuth"), rendered; absent: none. */
  oauth?: OAuthGrant;
  /** The server's declared params (sent in `initialize`, as ktsu does). */
  config: JsonObject;
  /** Per request (tool call), in ms. */
  timeoutMs: number;
}

/** An OAuth grant for a tool server: client credentials, or a refresh token (src/mcp-client/oauth.ts). */
export interface OAuthGrant {
  clientId: string;
  clientSecret: string | null;
  /** A refresh token: the refresh-token grant; null: client credentials. */
  refreshToken: string | null;
  scopes: string[];
}

export interface ToolInfo {
  name: string;
  description: string | null;
  /** The tool's JSON Schema for its arguments. */
  inputSchema: JsonObject;
  /** The tool's JSON Schema for its `structuredContent`, when it declares one. */
  outputSchema?: JsonObject;
}

export interface ToolResult {
  /** The text content blocks joined (other block types are described in brackets). */
  text: string;
  structuredContent: Json | null;
  isError: boolean;
}

export interface ToolSession {
  listTools(signal: AbortSignal): Promise<ToolInfo[]>;
  /**
   * Any error is a failed call that goes back to the model as an error result, except a StepError,
   * which fails the step (the workflow-test runner's `unmocked_step`).
   */
  /** `headers`: added to the call's request (its `traceparent`). */
  callTool(
    name: string,
    args: JsonObject,
    signal: AbortSignal,
    headers?: Record<string, string>,
  ): Promise<ToolResult>;
  close(): Promise<void>;
}

export interface ToolHost {
  /** Opens a session; throws (any error) when the server cannot be reached or initialised. */
  connect(target: ToolServerTarget, signal: AbortSignal): Promise<ToolSession>;
}

export interface ApprovalRequest {
  /** Names the request within its step, the same on every resume (e.g. `t3.0`): it finds its approval again. */
  key: string;
  kind: "tool" | "needs_human";
  server: string | null;
  tool: string | null;
  arguments: Json;
  /** Seconds until it times out; null: only the run's deadline ends the wait. */
  timeoutS: number | null;
  /** POSTed once, when the approval is created. `signSecret`: Standard Webhooks key (whsec_…). */
  notify: { url: string; signSecret: string | null } | null;
}

export interface ApprovalOutcome {
  id: string;
  status: Exclude<ApprovalStatus, "pending">;
  comment: string | null;
}

export interface ApprovalHost {
  /**
   * Resolves when a human decided (or the approval timed out). Asking again with the same key
   * (after an eviction) returns the existing approval's outcome, or waits for it.
   */
  request(req: ApprovalRequest, signal: AbortSignal, waiting?: ApprovalWaiting): Promise<ApprovalOutcome>;
}

/**
 * Told when the request starts waiting for a human (`true`, once the approval is pending) and
 * when its decision arrives (`false`): the engine turns these into the step's status.
 */
export type ApprovalWaiting = (waiting: boolean) => void;

/** What a wait step waits for: a signal (by name, maybe by key) until a time, or a time. */
export type WaitRequest =
  | { kind: "signal"; name: string; key: string | null; timeoutAt: number; schema: JsonSchemaLike | null }
  | { kind: "sleep"; until: number; seconds: number };

/** A JSON Schema as the bundle holds it (the engine validates signal bodies against it). */
export type JsonSchemaLike = boolean | JsonObject;

export interface WaitHost {
  /**
   * Resolves with the signal's body (a signal wait) or `{slept_s}` (a sleep). Asked again after
   * an eviction, it finds the wait it started (its times unchanged) and what has come meanwhile.
   * A signal that did not come by `timeoutAt` throws StepError `wait_timeout`. `waiting` is told
   * when the step starts waiting (the engine sets the step `waiting`).
   */
  wait(
    req: WaitRequest,
    signal: AbortSignal,
    waiting: () => void,
    /** Told when the wait began (its first start, also when asked again after an eviction). */
    begun?: (startedAt: string) => void,
  ): Promise<Json>;
}

export interface StepCheckpoint {
  load(): Json | null;
  /** Persisted (masked) before it returns. */
  save(state: Json): void;
}

export type StepExecutor<S> = (step: S, ctx: StepContext) => Promise<Json>;
