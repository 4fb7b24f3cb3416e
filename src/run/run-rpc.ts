/**
 * The RPC surface of a run's Durable Object as the Worker sees it (typed plainly: the generated
 * stub types are too deep), apart from the object so the HTTP face imports no Worker class.
 */
import type { Bundle, Json, JsonObject, Residency } from "../bundle.ts";
import type { StepRecord } from "../engine/types.ts";
import type { PublicDelivery } from "./deliveries/deliveries.ts";
import type { Envelope } from "./envelope.ts";
import { namedStub, parseRunId, placed } from "./jurisdiction.ts";
import type { BeginPayload, FlowKeyRpc } from "./keys/flow-key-rpc.ts";
import type { ListedRun } from "./listing/listing.ts";
import type {
  CancelResult,
  CompensateResult,
  PushOp,
  PushOutcome,
  RateLimitSlot,
  RunView,
  SignalResult,
} from "./run-calls.ts";
import type { RunFlow } from "./run-doc.ts";
import type { ApprovalRecord, DecideResult } from "./waits/approvals.ts";

export {
  CANCELED,
  type CancelCode,
  type CancelResult,
  type RunView,
  type SignalResult,
} from "./run-calls.ts";

export interface StartRequest {
  /** The id the run is known by (its jurisdiction first: jurisdiction.ts); default its object's hex id. */
  runId?: string;
  workflowKey: string;
  params: JsonObject;
  /** The recorded request: `{headers}` with the workflow's declared headers (docs/triggers.md). */
  request: JsonObject;
  /** Canonical hash of the body, for Idempotency-Key replays (null without a key). */
  bodyHash: string | null;
  idempotencyKey: string | null;
  waitMs: number;
  /** Origin of the invoke (`https://host`): approvals' `decide_url` is built on it. */
  origin?: string | null;
  /** Counted only if this creates the run (a replay of an existing one never is). */
  rateLimit?: RateLimitSlot | null;
  /** The definition to pin instead of this deployment's (a re-run of the old run's pinned one). */
  definition?: Bundle | null;
  /** A re-run: the run it re-runs and the records it reuses (src/run/start/rerun-plan.ts). */
  rerun?: { of: string; reused: Array<[string, StepRecord]>; arms?: Record<string, string> } | null;
  /** Its flow keys and how far its invoke got through them (start-run.ts asked the first). */
  flow?: RunFlow | null;
  /** The invoke's W3C `traceparent` header, as sent (the run object reads it; an invalid one is ignored). */
  traceparent?: string | null;
  /**
   * The caller carries the listing entry of a run that ends before its answer (an express run,
   * or any run that owes nothing else: listing.ts, `keepListed`): the run's object sends none,
   * arms no guard for it, and answers it as `listing`.
   */
  carried?: boolean;
}

/** What a re-run needs of the run it re-runs. */
export type RerunSource =
  | { outcome: "not_found" | "active" }
  | {
      outcome: "finished";
      status: "complete" | "failed" | "canceled";
      def: Bundle;
      workflowKey: string;
      params: JsonObject;
      request: JsonObject;
      records: Array<[string, StepRecord]>;
    };

export type StartResult =
  /** `queued`: the run waits to start (its flow keys' answer), at the moment of the answer. */
  | {
      outcome: "started" | "existing";
      runId: string;
      envelope: Envelope | null;
      queued?: boolean;
      /** The entry of a run that ended before this answer, for the caller that carries it (`carried`). */
      listing?: ListedRun;
    }
  | { outcome: "conflict"; runId: string }
  | { outcome: "rate_limited"; runId: string };

/**
 * The object of the run `runId` names (64 hex digits, after its jurisdiction if it has one: as
 * issued), in that jurisdiction, or null for anything else: a caller's id is never trusted to be one.
 */
export function runStub(env: Env, runId: string): RunRpc | null {
  const id = parseRunId(runId);
  if (!id) return null;
  try {
    return placed(env.RUNS, id.residency, (ns) => ns.get(ns.idFromString(id.hex))) as unknown as RunRpc;
  } catch {
    return null;
  }
}

/** The RPC surface the Worker uses (typed plainly: the generated stub types are too deep). */
export interface RunRpc {
  start(req: StartRequest): Promise<StartResult>;
  view(): Promise<RunView | null>;
  cancel(code?: "canceled" | "replaced" | "canceled_by_signal"): Promise<CancelResult>;
  /** Every failed compensation of the finished run once more (docs/http-api.md). */
  compensate(): Promise<CompensateResult>;
  /** The envelope once the run has finished, or null if it is still active after `ms`. */
  waitFinished(ms: number): Promise<Envelope | null>;
  remove(): Promise<"deleted" | "active" | "not_found">;
  relist(): Promise<void>;
  expire(): Promise<"deleted" | "kept" | "gone">;
  fetch(request: Request): Promise<Response>;
  /** The old run's definition, inputs and records, for a re-run (docs/http-api.md). */
  rerunSource(): Promise<RerunSource>;
  /** Notes that `runId` re-runs this run; with `once`, refuses if it was re-run before. */
  rerunStarted(runId: string, once: boolean): Promise<"claimed" | "already" | "not_found" | "active">;
  /** A flow key says the queued run may go on, with a debounce's or batch's params (false: it has ended). */
  begin(payload?: BeginPayload): Promise<boolean>;
  /** An A2A task's push configs: made, read, listed, deleted (docs/a2a.md). */
  pushConfigs(op: PushOp): Promise<PushOutcome>;
  /** A signal for the run's wait for `name` (with `key`: only a wait with that key). */
  signal(name: string, body: Json, key?: string | null): Promise<SignalResult>;
  /** Every approval of the run (null: no such run). */
  approvals(): Promise<ApprovalRecord[] | null>;
  /** Decides one approval by id, or (ktsu's form) the oldest pending approval of a step. */
  decide(
    target: { id: string } | { step: string },
    decision: "approved" | "rejected",
    comment: string | null,
  ): Promise<DecideResult>;
  /** The run's deliveries (null: no such run). */
  deliveries(): Promise<PublicDelivery[] | null>;
  /** One attempt more of delivery `id`, now (null: the run has no such delivery). */
  retryDelivery(id: string): Promise<PublicDelivery | null>;
  /** Each failed delivery created at or after `since` (epoch ms) is attempted once more; how many. */
  recoverDeliveries(since: number): Promise<number>;
}

/** The flow key object named `name` (`<workflow>\n<key>`: flow-key-rpc.ts), in its workflow's jurisdiction. */
export function flowKeyStub(env: Env, residency: Residency | null, name: string): FlowKeyRpc {
  return namedStub(env.FLOW_KEYS, residency, name);
}
