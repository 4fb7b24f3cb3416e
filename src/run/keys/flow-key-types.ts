/**
 * What a flow key is asked and answers (docs/triggers.md, "Shaping bursts"): the settings an
 * invoke brings, its admission and turn verdicts, why a run waits, and what the key's object must
 * perform. The rules themselves are flow-key-rules.ts; the run's document and its RPC read these
 * types alone.
 */
import type { JsonObject } from "../../bundle.ts";

export interface FlowSettings {
  throttle: { limit: number; periodMs: number } | null;
  debounce: { periodMs: number; maxWaitMs: number } | null;
  batch: { maxItems: number; maxWaitMs: number } | null;
  concurrency: { limit: number; onFull: "queue" | "skip" | "replace" } | null;
}

export type QueueReason = "concurrency" | "throttle" | "debounce" | "batch";

/** A key's queue holds at most this many runs; beyond it an invoke is refused (`queue_full`). */
export const MAX_QUEUED = 10_000;
/** A batch run's params stay under this (one stored value); an item that would pass it opens the next batch. */
export const MAX_BATCH_CHARS = 1024 * 1024;

export interface AdmitRequest {
  /** This key's name (`<workflow>\n<key>`): a run begun here is told which of its keys said so. */
  gate: string;
  /** The id a new run gets (the invoke's own). */
  runId: string;
  settings: FlowSettings;
  /** -100..100 (rendered and clamped by the Worker). */
  priority: number;
  params: JsonObject;
  /** `cancel_on` signals of this key the run may be canceled by. */
  cancelOn: string[];
}

export type AdmitVerdict =
  | { outcome: "start"; runId: string }
  | { outcome: "queued"; runId: string; reason: QueueReason; startsAt: number | null }
  /** Coalesced into an existing run (debounce, batch): no new run. */
  | { outcome: "joined"; runId: string; reason: QueueReason; startsAt: number | null }
  /** `on_full: skip`: no run; the oldest active one is named. */
  | { outcome: "skipped"; runId: string }
  | { outcome: "queue_full"; retryAfterS: number };

export type TurnVerdict =
  | { outcome: "start"; params?: JsonObject; coalesced?: number }
  | { outcome: "queued"; reason: QueueReason; startsAt: number | null };

/** What the object must do: begin runs whose turn came (a group's with its params), cancel runs. */
export interface FlowEffects {
  begin: Array<{ runId: string; params?: JsonObject; coalesced?: number }>;
  cancel: Array<{ runId: string; code: "replaced" | "canceled_by_signal" }>;
}

/** A run waiting in a key's queue (flow-key-rules.ts). */
export interface Queued {
  key: string;
  runId: string;
  at: number;
  reason: QueueReason;
  /** A debounce or batch run: its params are its group's, handed over when it begins. */
  group?: true;
}

/** A debounce group or a batch (flow-key-rules.ts). */
export interface Group {
  runId: string;
  kind: "debounce" | "batch";
  firstAt: number;
  due: number;
  count: number;
  /** Debounce: the last invoke's params. */
  params?: JsonObject;
  /** Batch: closed before its time (full, or the next item would not fit). */
  closed?: true;
  /** Its place in the queue once it closes: the last invoke's priority (debounce), the first's (batch). */
  priority?: number;
  /** Batch: JSON length of its items so far (memory only). */
  chars?: number;
  /** Its begin is on its way to the run (memory only: after an eviction it is sent again). */
  handing?: true;
}

/** A key's active runs and recent starts (its `s` row). */
export interface Shared {
  /** This key's name. */
  gate?: string;
  /** The settings of the latest invoke (a deploy may change them; a wake-up needs them). */
  settings?: FlowSettings;
  /** Runs active under `concurrency`, with their starts (oldest first). */
  active: Array<[string, number]>;
  /** Starts under `throttle` in the current window (at most `limit`, oldest first). */
  starts: number[];
}
