/**
 * What a run gives the scheduler (src/engine/scheduler.ts): its bundle, env, executors, masker,
 * fetch, clock, the records of an earlier incarnation and the hooks that persist what finishes
 * (`RunHost`); the options of one pipeline (`PipelineOptions`); and why a run stops early
 * (`RunAbort`). Everything the Worker provides comes in through here, so the engine stays pure.
 */
import type { Bundle, Json, JsonObject, StepKinds } from "../bundle.ts";
import type { Clock } from "./clock.ts";
import type { Masker } from "./mask.ts";
import type { SpanSink, TraceRef } from "./trace.ts";
import type {
  ApprovalHost,
  BudgetLedger,
  OutputStream,
  StepCheckpoint,
  StepContext,
  StepExecutor,
  StepRecord,
  ToolHost,
  WaitHost,
} from "./types.ts";

/** Largest step output we record (its JSON, in UTF-8 bytes). */
export const MAX_OUTPUT_BYTES = 1024 * 1024;

/**
 * One executor per step kind (src/steps/index.ts), typed against the bundle's `StepKinds`; the
 * workflow step is run by the scheduler itself (a pipeline inside the pipeline).
 */
export type Executors = { [K in Exclude<keyof StepKinds, "workflow">]: StepExecutor<StepKinds[K]> };

/** Why a run stopped early; used as the AbortSignal reason of the run. */
export class RunAbort extends Error {
  readonly kind: "timeout" | "canceled";
  constructor(kind: "timeout" | "canceled") {
    super(kind === "timeout" ? "the run reached its deadline" : "the run was canceled");
    this.name = "RunAbort";
    this.kind = kind;
  }
}

export interface RunHost {
  bundle: Bundle;
  runId: string;
  env: Record<string, string | undefined>;
  executors: Executors;
  masker: Masker;
  fetch: StepContext["fetch"];
  ai?: StepContext["ai"];
  now(): number;
  /** The run's trace: its id, and where finished client spans go (null: none are kept). */
  trace?: { ref: TraceRef; sink: SpanSink };
  /** Timers and the time executors see (retries, back-offs); default the system clock. `now()` agrees with it. */
  clock?: Clock;
  /** Records persisted by an earlier incarnation of this run, by slash path. */
  restored: ReadonlyMap<string, StepRecord>;
  /** The live record of every step, by slash path (the envelope reads it). */
  records: Map<string, StepRecord>;
  /** Called when a step starts running. */
  onStepStarted?(path: string, record: StepRecord): void;
  /** Called when a running step starts or stops waiting for a human (`pending_approval` ⇄ `running`). */
  onStepChanged?(path: string, record: StepRecord): void;
  /**
   * Called once per step that finished (complete, failed, skipped by condition): persist it.
   * `effect`: the step reached outside the run (a webhook sent, a model called), so its record
   * must be kept before anything else happens; a recomputable one (a transform, a skip, a
   * workflow or fan-out step whose children carry their own) may ride with the next write.
   */
  onStepFinished(path: string, record: StepRecord, effect: boolean): void;
  /** MCP tool servers (agent steps with `servers:`). */
  tools?: ToolHost;
  /** Human approvals, per step path. */
  approvals?(path: string): ApprovalHost;
  /** Waits of wait steps (signals, sleeps), per step path. */
  waits?(path: string): WaitHost;
  /** Resumable state of a step (an agent's conversation), per step path. */
  checkpoint?(path: string): StepCheckpoint;
  /** Outbound requests the run may have in flight (fan-out items in flight never exceed it). */
  outboundLimit?: number;
  /** The arm a re-run keeps for a split step (the run it re-runs chose it; docs/http-api.md, "Re-runs"). */
  pinnedArm?(path: string): string | null;
  /** Where a streaming step's text goes as it is generated (none: nobody listens for it). */
  outputStream?(path: string): OutputStream | undefined;
}

export interface PipelineOptions {
  /** Slash-path prefix of this pipeline's steps ("" for the root, "notify/" for a child). */
  prefix: string;
  params: Json;
  env: JsonObject;
  /** The recorded request (`{headers}`) of a root pipeline; sub-workflows see none. */
  request?: Json;
  deadline: number;
  /**
   * What a step that ends at or after `deadline` turns into: the executor's own deadline handling
   * can win the race against the timer that aborts `signal`, and the outcome must not depend on it.
   * Default: the run's timeout.
   */
  deadlineReason?: () => unknown;
  signal: AbortSignal;
  /** `key` names the child ledger so a resumed run restores a sub-workflow's spend. */
  budget: BudgetLedger & { child(capUsd: number | null, key?: string): BudgetLedger };
  /** False inside a sub-workflow whose path from the root is not all `webhooks: execute`. */
  webhooksAllowed: boolean;
}
