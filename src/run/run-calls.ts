/**
 * What is asked of a run and what it answers (a start's rate limit slot; a signal, a cancel, a
 * read): the lifecycle decides the answers (lifecycle-io.ts re-exports them) and the run object's
 * RPC carries both (run-rpc.ts), so both sides, and whoever calls a run, read them here alone,
 * without the Worker's types.
 */

import type { CompiledAuth } from "../bundle.ts";
import type { Envelope } from "./envelope.ts";
import type { PushConfig } from "./run-doc.ts";
import type { GraphNode } from "./run-graph.ts";
import type { DeliverResult } from "./waits/waits.ts";

export type SignalResult =
  | DeliverResult
  | { outcome: "kept" | "pending" | "not_waiting" | "not_found" | "not_active" | "unknown" };

export type CancelResult =
  | { outcome: "canceled"; envelope: Envelope }
  | { outcome: "not_active" }
  | { outcome: "not_found" };

export interface RunView {
  auth: CompiledAuth | null;
  envelope: Envelope;
  graph: GraphNode[];
  /** An express run that completed keeps no record: its reads are 410 `run_not_kept`. */
  kept?: false;
}

/** Why a run was canceled: by a caller, by a newer run of its key (`on_full: replace`), by a `cancel_on` signal. */
export type CancelCode = "canceled" | "replaced" | "canceled_by_signal";
export const CANCELED: Record<CancelCode, string> = {
  canceled: "the run was canceled",
  replaced: "a newer run of its concurrency key replaced it (on_full: replace)",
  canceled_by_signal: "a cancel_on signal of its key canceled it",
};

/** Which limit an invoke counts against (start/rate-limit.ts): the binding's name and the rendered key. */
export interface RateLimitSlot {
  binding: string;
  key: string;
}

/** What `POST /runs/{id}/compensate` is answered from. */
export type CompensateResult =
  | { outcome: "retried"; retried: number }
  | { outcome: "not_found" | "active" | "nothing" };

/** What an A2A task's push configs are asked (docs/a2a.md, "Push notifications"). */
export type PushOp =
  | { op: "create"; config: PushConfig }
  | { op: "get" | "delete"; id: string }
  | { op: "list" };

/** `configs`: the ones asked for (create: the one made; delete: none). */
export type PushOutcome =
  | { outcome: "ok"; configs: PushConfig[] }
  | { outcome: "not_found" | "config_not_found" | "not_active" | "too_many" };
