/**
 * The run lifecycle's interface (lifecycle.ts): the shell that performs its decisions, its
 * options and the start input (the answers of its inputs are in ../run-calls.ts, which the run
 * object's RPC returns). Apart from the class so the shells
 * (the Durable Object, the workflow-test runner) and the RPC types read it alone.
 */
import type { ApprovalHost, StepRecord } from "../../engine/types.ts";
import type { RunEvent } from "../events/events.ts";
import type { ApprovalRecord } from "../waits/approvals.ts";
import type { RunEffect, Wake } from "./run-plan.ts";

/** What performs the lifecycle's decisions: the Durable Object, or a workflow test's runner. */
export interface RunShell {
  /**
   * Arm the next wake-up, replacing the one before (null: none). A durable one is the object's
   * alarm, armed in the same commit as the run's writes of this turn; before the run's first
   * write, a timer.
   */
  wake(w: Wake | null): void;
  /** Perform these effects (after the answer being made has left); each reports back through its result method. */
  perform(effects: RunEffect[]): void;
  /** A step's record changed in a way a live listener sees (started, waiting, finished, settled). */
  stepChanged?(path: string, rec: StepRecord): void;
  /** A streaming step's answer as it is generated: masked text, or null (what came is void). Never stored. */
  output?(path: string, text: string | null): void;
  approvalEvent?(type: "approval.requested" | "approval.decided", approval: ApprovalRecord): void;
  /**
   * The run ended; its document and records are final and stored (`completed`: its last event, for
   * live listeners; `compensating`: its compensation phase follows, and live streams stay open
   * until `compensationEnded`).
   */
  ended?(completed: () => RunEvent, compensating: boolean): void;
  /** A compensation started or ended (docs/file-format.md, "Compensation"). */
  compensationEvent?(ev: RunEvent): void;
  /** The compensation phase ended: live streams close. */
  compensationEnded?(): void;
}

export interface LifecycleOptions {
  /** While a step works, wake at least this often to resume after an eviction (null: never evicted). */
  heartbeatMs: number | null;
  /** How long a finished run is kept (the Worker's RUN_RETENTION_S); null: for ever (tests). */
  retentionMs?: number | null;
  /** Wraps a step's approvals host (the test runner decides approvals from the case). */
  approvals?(path: string, inner: ApprovalHost): ApprovalHost;
  /** Every judge judges, whatever its `sample` (workflow tests and evals: docs/workflow-tests.md). */
  judgeEvery?: boolean;
  /** An approval started waiting (`created`: it is new). */
  approvalRequested?(rec: ApprovalRecord, created: boolean): void;
}
