/**
 * Runs one pipeline: starts every step whose dependencies have finished, evaluates conditions,
 * hands steps to their executors, records outcomes, and fails the pipeline at the first failed
 * step (running siblings become `canceled`, unstarted ones `skipped`). Sub-workflows are run
 * inline by recursing into another pipeline with a tighter deadline and a child budget.
 *
 * Pure TypeScript: everything the Worker provides (storage, fetch, env, the clock) comes in
 * through `RunHost`, so the scheduler is tested without a Durable Object.
 */
import {
  type Bundle,
  type CompiledStep,
  type CompiledWorkflow,
  type ForEach,
  forEachOf,
  hasEffect,
  type Json,
  type JsonObject,
  type JsonSchema,
  STEP_KIND_TRAITS,
  type StepKinds,
  type WorkflowStep,
} from "../bundle.ts";
import { type Clock, systemClock } from "./clock.ts";
import { evaluate, isTruthy } from "./expressions.ts";
import { addMetrics, type FanOutItem, type ItemOutcome, runFanOut } from "./fan-out.ts";
import type { Masker } from "./mask.ts";
import { describeViolations, validateJson } from "./schema.ts";
import {
  ancestorPaths,
  markFinished,
  markHeld,
  markResumed,
  markRunning,
  markSkipped,
} from "./step-status.ts";
import { render } from "./substitute.ts";
import {
  type ApprovalHost,
  type BudgetLedger,
  type EvalScope,
  emptyMetrics,
  type StepCheckpoint,
  type StepContext,
  StepError,
  type StepExecutor,
  type StepRecord,
  StepSkipped,
  type ToolHost,
  type WaitHost,
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

const FINISHED = new Set(["complete", "skipped"]);

/** Steps of one run mostly start and finish within the same millisecond: format it once. */
let lastIso = { ms: Number.NaN, text: "" };
function iso(ms: number): string {
  if (ms !== lastIso.ms) lastIso = { ms, text: new Date(ms).toISOString() };
  return lastIso.text;
}

export function pendingRecord(id: string): StepRecord {
  return {
    id,
    status: "pending",
    output: null,
    error: null,
    started_at: null,
    finished_at: null,
    metrics: emptyMetrics(),
    tool_calls: [],
    annotations: null,
    steps: [],
  };
}

/** Whether the JSON of `value` is over `max` UTF-8 bytes (encoding only when it could be). */
function jsonOver(value: Json, max: number): boolean {
  const json = JSON.stringify(value);
  // A UTF-16 code unit is at most 3 UTF-8 bytes: most outputs never need encoding.
  if (json.length * 3 <= max) return false;
  return new TextEncoder().encode(json).length > max;
}

/**
 * Runs `wf` to completion and returns the output of its last listed step. Throws StepError when a
 * step fails (with `subPath` naming it) and RunAbort when the run's signal aborts.
 */
export async function runPipeline(host: RunHost, wf: CompiledWorkflow, opts: PipelineOptions): Promise<Json> {
  const outputs = new Map<string, Json>();
  const started = new Set<string>();
  const running = new Map<string, Promise<void>>();
  // Aborting this controller cancels the running steps of this pipeline (and of its children).
  const local = new AbortController();
  const onRunAbort = () => local.abort(opts.signal.reason);
  if (opts.signal.aborted) onRunAbort();
  else opts.signal.addEventListener("abort", onRunAbort, { once: true });

  // Steps finished by an earlier incarnation are not repeated.
  for (const step of wf.steps) {
    const path = opts.prefix + step.id;
    const rec = host.restored.get(path);
    if (rec && FINISHED.has(rec.status)) {
      host.records.set(path, rec);
      outputs.set(step.id, rec.output);
      started.add(step.id);
    } else if (!host.records.has(path)) {
      host.records.set(path, pendingRecord(step.id));
    }
  }

  let failure: unknown = null;
  try {
    await new Promise<void>((resolve, reject) => {
      const pump = () => {
        if (failure !== null) return;
        for (const step of wf.steps) {
          if (started.has(step.id)) continue;
          if (!step.deps.every((d) => outputs.has(d))) continue;
          started.add(step.id);
          const p = runStep(host, wf, step, opts, outputs, local.signal).then(
            (output) => {
              running.delete(step.id);
              outputs.set(step.id, output);
              pump();
            },
            (err: unknown) => {
              running.delete(step.id);
              if (failure === null) {
                failure = err;
                local.abort(err);
                reject(err);
              }
            },
          );
          running.set(step.id, p);
        }
        if (running.size === 0 && failure === null) {
          if (outputs.size === wf.steps.length) resolve();
          else reject(new StepError("internal_error", "the pipeline cannot make progress"));
        }
      };
      if (local.signal.aborted) reject(local.signal.reason);
      else pump();
    });
  } catch (err) {
    // Let running siblings settle (they see the abort and record `canceled`) before unwinding.
    await Promise.allSettled([...running.values()]);
    markUnstarted(host, wf, opts.prefix, started, err);
    throw err;
  } finally {
    opts.signal.removeEventListener("abort", onRunAbort);
  }
  const last = wf.steps[wf.steps.length - 1];
  return last ? (outputs.get(last.id) ?? null) : null;
}

function markUnstarted(
  host: RunHost,
  wf: CompiledWorkflow,
  prefix: string,
  started: Set<string>,
  err: unknown,
) {
  const reason = err instanceof RunAbort && err.kind === "canceled" ? "run_canceled" : "run_failed";
  for (const step of wf.steps) {
    if (started.has(step.id)) continue;
    const rec = host.records.get(prefix + step.id) ?? pendingRecord(step.id);
    markSkipped(rec, reason);
    host.records.set(prefix + step.id, rec);
    if (step.kind === "workflow") skipChildTree(host, step, `${prefix}${step.id}/`, reason);
  }
}

function skipChildTree(host: RunHost, step: WorkflowStep, prefix: string, reason: string) {
  const child = host.bundle.workflows[step.workflow];
  // A fan-out's children live under its items, which exist only once started.
  if (!child || step.forEach) return;
  for (const s of child.steps) {
    const rec = host.records.get(prefix + s.id) ?? pendingRecord(s.id);
    if (rec.status === "pending") {
      markSkipped(rec, reason);
      host.records.set(prefix + s.id, rec);
    }
    if (s.kind === "workflow") skipChildTree(host, s, `${prefix}${s.id}/`, reason);
  }
}

function scopeFor(step: CompiledStep, opts: PipelineOptions, outputs: Map<string, Json>): EvalScope {
  const stepOutputs: JsonObject = {};
  for (const a of step.ancestors) stepOutputs[a] = outputs.get(a) ?? null;
  const scope: EvalScope = { params: opts.params, env: opts.env, step: stepOutputs };
  if (opts.request !== undefined) scope.request = opts.request;
  return scope;
}

async function runStep(
  host: RunHost,
  wf: CompiledWorkflow,
  step: CompiledStep,
  opts: PipelineOptions,
  outputs: Map<string, Json>,
  signal: AbortSignal,
): Promise<Json> {
  const path = opts.prefix + step.id;
  const rec = host.records.get(path) ?? pendingRecord(step.id);
  host.records.set(path, rec);
  rec.finished_at = null;
  rec.error = null;
  rec.output = null;
  rec.metrics = emptyMetrics();
  rec.tool_calls = [];
  rec.annotations = null;
  const finish = startRecord(host, path, rec);
  // A webhook or agent step reaches outside the run; a fan-out's items carry their own effects.
  const effect = hasEffect(step);
  const forEach = forEachOf(step);
  const skip = (reason: string, executed = false) => {
    if (step.kind === "workflow") skipChildTree(host, step, `${path}/`, reason);
    return recordSkip(host, path, rec, finish, reason, executed && effect);
  };

  const scope = scopeFor(step, opts, outputs);
  if (!signal.aborted) {
    try {
      if (step.kind === "webhook" && !opts.webhooksAllowed) return skip("webhooks_suppressed");
      if (step.condition !== null && !isTruthy(evaluate(step.condition, scope as unknown as Json))) {
        return skip("condition_false");
      }
    } catch (err) {
      // A condition that cannot be evaluated fails the step like its executor would.
      const outcome = await execute(host, path, rec, finish, signal, opts, false, () => Promise.reject(err));
      return outcome.status === "skipped" ? skip(outcome.reason) : settledStep(step, outcome);
    }
  }
  const outcome = await execute(
    host,
    path,
    rec,
    finish,
    signal,
    opts,
    effect,
    () => {
      if (forEach) return runFanOutStep(host, wf, step, forEach, scope, opts, path, rec, signal);
      if (step.kind === "workflow") return runWorkflowStep(host, step, scope, opts, path, rec, signal);
      const executor = host.executors[step.kind] as StepExecutor<CompiledStep>;
      return executor(step, stepContext(host, wf, path, scope, signal, opts, rec));
    },
    // A transform checks its output.schema on its result, in its executor.
    STEP_KIND_TRAITS[step.kind].output !== "result" && step.outputSchema
      ? (output) => checkOutputSchema(step.outputSchema as JsonSchema, output)
      : undefined,
  );
  // An agent that skipped itself (ktsu_skip_reason) called its model: that is an effect.
  if (outcome.status === "skipped") return skip(outcome.reason, true);
  return settledStep(step, outcome);
}

/**
 * A step's outcome as its pipeline sees it: its output, or the error that stops the pipeline. A
 * failed step with `on_error: continue` stays recorded `failed`, and its dependents read
 * `{"error": {code, message}}` as its output (SPEC 12); a stop from outside still stops.
 */
function settledStep(step: CompiledStep, outcome: Exclude<Executed, { status: "skipped" }>): Json {
  if (outcome.status === "complete") return outcome.output;
  if (outcome.status === "canceled") throw outcome.reason;
  const e = outcome.error;
  if (step.onError === "continue") return { error: { code: e.code, message: e.message } };
  throw new StepError(e.code, e.message, e.subPath ? `${step.id}/${e.subPath}` : step.id);
}

/** How one unit of work (a step, or one fan-out item) ended; `failed` carries the recorded (masked) message. */
type Executed =
  | { status: "complete"; output: Json }
  | { status: "skipped"; reason: string }
  | { status: "canceled"; reason: unknown }
  | { status: "failed"; error: StepError };

/**
 * Runs the body of a step or of a fan-out item under its record, and settles the record the same
 * way for both: the output checked, masked and bounded as recorded; a skip left to the caller;
 * a stop from outside (deadline, cancel, a failed sibling) `canceled`; anything else `failed`.
 */
async function execute(
  host: RunHost,
  path: string,
  rec: StepRecord,
  finish: (status: StepRecord["status"]) => void,
  signal: AbortSignal,
  opts: PipelineOptions,
  effect: boolean,
  body: () => Promise<Json>,
  check?: (output: Json) => void,
): Promise<Executed> {
  try {
    if (signal.aborted) throw signal.reason;
    let output = await body();
    if (signal.aborted) throw signal.reason;
    check?.(output);
    output = recordable(host, output);
    rec.output = output;
    finish("complete");
    host.onStepFinished(path, rec, effect);
    return { status: "complete", output };
  } catch (err) {
    if (err instanceof StepSkipped && !signal.aborted) return { status: "skipped", reason: err.reason };
    const stopped = signal.aborted && (err === signal.reason || !(err instanceof StepError));
    if (stopped || host.now() >= opts.deadline) {
      // Stopped from outside (deadline, cancel, a sibling failed): not this step's failure.
      rec.output = null;
      finish("canceled");
      const reason = signal.aborted
        ? signal.reason
        : (opts.deadlineReason ?? (() => new RunAbort("timeout")))();
      return { status: "canceled", reason };
    }
    const e = toStepError(err);
    rec.output = null;
    rec.error = { code: e.code, message: host.masker.maskText(e.message) };
    finish("failed");
    host.onStepFinished(path, rec, effect);
    return { status: "failed", error: new StepError(e.code, rec.error.message, e.subPath) };
  }
}

/** A skipped step or item: its output is the skip object, and it is persisted like a finished one. */
function recordSkip(
  host: RunHost,
  path: string,
  rec: StepRecord,
  finish: (status: StepRecord["status"]) => void,
  reason: string,
  effect = false,
): Json {
  const output = markSkipped(rec, reason);
  finish("skipped");
  host.onStepFinished(path, rec, effect);
  return output;
}

/** Tool arguments and results can hold a secret (one passed to a tool server): masked as recorded. */
function maskToolRecords(host: RunHost, rec: StepRecord): void {
  if (rec.tool_calls.length > 0) {
    rec.tool_calls = host.masker.maskJson(
      rec.tool_calls as unknown as Json,
    ) as unknown as StepRecord["tool_calls"];
  }
  if (rec.annotations !== null) {
    rec.annotations = host.masker.maskJson(
      rec.annotations as unknown as Json,
    ) as unknown as StepRecord["annotations"];
  }
}

function stepContext(
  host: RunHost,
  wf: CompiledWorkflow,
  path: string,
  scope: EvalScope,
  signal: AbortSignal,
  opts: PipelineOptions,
  rec: StepRecord,
): StepContext {
  return {
    bundle: host.bundle,
    runId: host.runId,
    path,
    workflow: wf,
    scope,
    signal,
    deadline: opts.deadline,
    env: host.env,
    fetch: host.fetch,
    metrics: rec.metrics,
    budget: opts.budget,
    ai: host.ai,
    toolCalls: rec.tool_calls,
    annotate: (a) => {
      rec.annotations = a;
    },
    tools: host.tools,
    approvals: approvalsOf(host, path, rec),
    waits: waitsOf(host, path, rec),
    checkpoint: host.checkpoint?.(path),
    clock: host.clock,
    holdsSecret: (text) => host.masker.maskText(text) !== text,
  };
}

/**
 * The step's approvals host, through which the engine alone sets `pending_approval` while at
 * least one of its requests waits for a human, and `running` again once none does. A workflow
 * (or fan-out) step above it shows the same: a parent is waiting while any step below it waits.
 */
function approvalsOf(host: RunHost, path: string, rec: StepRecord): ApprovalHost | undefined {
  const inner = host.approvals?.(path);
  if (!inner) return undefined;
  const onWaiting = (on: boolean) => {
    const counts = waitingCounts(host);
    for (const p of [path, ...ancestorPaths(path)]) {
      const r = p === path ? rec : host.records.get(p);
      if (!r) continue;
      const n = (counts.get(p) ?? 0) + (on ? 1 : -1);
      counts.set(p, n);
      if (on ? n === 1 && markHeld(r, "pending_approval") : n === 0 && markResumed(r)) {
        host.onStepChanged?.(p, r);
      }
    }
  };
  return { request: (req, signal) => inner.request(req, signal, onWaiting) };
}

/** The step's waits host: the engine sets the step `waiting` once its wait has started. */
function waitsOf(host: RunHost, path: string, rec: StepRecord): WaitHost | undefined {
  const inner = host.waits?.(path);
  if (!inner) return undefined;
  return {
    wait: (req, signal) =>
      inner.wait(
        req,
        signal,
        () => {
          if (markHeld(rec, "waiting")) host.onStepChanged?.(path, rec);
        },
        // Resumed after an eviction, the step started when its wait did, not when it was asked again.
        (startedAt) => {
          if (rec.started_at === null || startedAt < rec.started_at) rec.started_at = startedAt;
        },
      ),
  };
}

/** How many approval requests wait at or below each step path, per run. */
const waiting = new WeakMap<RunHost, Map<string, number>>();
function waitingCounts(host: RunHost): Map<string, number> {
  let counts = waiting.get(host);
  if (!counts) {
    counts = new Map();
    waiting.set(host, counts);
  }
  return counts;
}

/** The output as recorded: masked, and within MAX_OUTPUT_BYTES. */
function recordable(host: RunHost, output: Json): Json {
  const masked = host.masker.maskJson(output);
  if (jsonOver(masked, MAX_OUTPUT_BYTES)) {
    throw new StepError("output_too_large", `the step output is over ${MAX_OUTPUT_BYTES} bytes`);
  }
  return masked;
}

/** A step's `output.schema` (transforms check theirs on their result, in the executor). */
function checkOutputSchema(schema: JsonSchema, output: Json): void {
  const violations = validateJson(schema, output);
  if (violations.length === 0) return;
  throw new StepError(
    "output_schema_mismatch",
    `the step output does not match its output.schema: ${describeViolations(violations)}`,
  );
}

function toStepError(err: unknown): StepError {
  if (err instanceof StepError) return err;
  if (err instanceof RunAbort)
    return new StepError(err.kind === "timeout" ? "timeout" : "canceled", err.message);
  const message = err instanceof Error ? err.message : String(err);
  return new StepError("internal_error", message);
}

async function runWorkflowStep(
  host: RunHost,
  step: WorkflowStep,
  scope: EvalScope,
  opts: PipelineOptions,
  path: string,
  rec: StepRecord,
  signal: AbortSignal,
): Promise<Json> {
  const child = host.bundle.workflows[step.workflow];
  if (!child) throw new StepError("internal_error", `sub-workflow ${step.workflow} is not in the bundle`);
  const input = render(step.input, scope);
  const violations = validateJson(child.paramsSchema, input);
  if (violations.length > 0) {
    const list = describeViolations(violations, Number.POSITIVE_INFINITY);
    throw new StepError("invalid_input", `input does not match ${child.name}'s params.schema: ${list}`);
  }
  // The child can only tighten the deadline and the budget.
  const now = host.now();
  const ownDeadline = child.policy.timeoutSet ? now + child.policy.timeoutS * 1000 : Number.POSITIVE_INFINITY;
  const deadline = Math.min(opts.deadline, ownDeadline);
  const childAbort = new AbortController();
  const onParent = () => childAbort.abort(signal.reason);
  if (signal.aborted) onParent();
  else signal.addEventListener("abort", onParent, { once: true });
  const tighter = deadline < opts.deadline;
  const childTimeout = () => new StepError("timeout", `${child.name} reached its timeout_s`);
  const cancelTimer = tighter
    ? (host.clock ?? systemClock).setTimer(() => childAbort.abort(childTimeout()), deadline - now)
    : undefined;
  const budget = opts.budget.child(child.policy.costBudgetUsd, path);
  try {
    return await runPipeline(host, child, {
      prefix: `${path}/`,
      params: input,
      env: {},
      deadline,
      deadlineReason: tighter ? childTimeout : opts.deadlineReason,
      signal: childAbort.signal,
      budget: budget as PipelineOptions["budget"],
      // Dual opt-in: the step says `execute`, and the child file does not say `suppress`.
      webhooksAllowed: opts.webhooksAllowed && step.webhooks === "execute" && child.webhooks !== "suppress",
    });
  } catch (err) {
    // A child's own timeout is this step's failure; the run's deadline or cancel is not.
    if (err instanceof StepError && !signal.aborted) throw err;
    throw signal.aborted ? signal.reason : err;
  } finally {
    cancelTimer?.();
    signal.removeEventListener("abort", onParent);
    aggregateChildMetrics(host, child, `${path}/`, rec);
  }
}

/** A `for_each` step: its items run through `runFanOutItem` (see fan-out.ts for the rest). */
function runFanOutStep(
  host: RunHost,
  wf: CompiledWorkflow,
  step: CompiledStep,
  forEach: ForEach,
  scope: EvalScope,
  opts: PipelineOptions,
  path: string,
  rec: StepRecord,
  signal: AbortSignal,
): Promise<Json> {
  return runFanOut(host, {
    path,
    forEach,
    scope,
    record: rec,
    signal,
    runItem: (item) => runFanOutItem(host, wf, step, scope, opts, item),
  });
}

/**
 * Marks a step's (or fan-out item's) record running from now and tells the host; the function it
 * returns settles the record with a status, its duration, and its tool calls masked.
 */
function startRecord(host: RunHost, path: string, rec: StepRecord): (status: StepRecord["status"]) => void {
  const t0 = host.now();
  markRunning(rec, iso(t0));
  host.onStepStarted?.(path, rec);
  return (status) => {
    const t1 = host.now();
    markFinished(rec, status, iso(t1), t1 - t0);
    maskToolRecords(host, rec);
  };
}

/**
 * One item of a fan-out, recorded like a step (id = its index, path `<step>/<index>`) and
 * persisted when it finishes; its substitutions see `item` and `item_index`.
 */
async function runFanOutItem(
  host: RunHost,
  wf: CompiledWorkflow,
  step: CompiledStep,
  stepScope: EvalScope,
  opts: PipelineOptions,
  item: FanOutItem,
): Promise<ItemOutcome> {
  const { path, signal } = item;
  const rec = pendingRecord(String(item.index));
  host.records.set(path, rec);
  const finish = startRecord(host, path, rec);
  const scope: EvalScope = { ...stepScope, item: item.value, item_index: item.index };
  const effect = STEP_KIND_TRAITS[step.kind].effect;
  const outcome = await execute(host, path, rec, finish, signal, opts, effect, () => {
    if (step.kind === "workflow") return runWorkflowStep(host, step, scope, opts, path, rec, signal);
    const executor = host.executors[step.kind] as StepExecutor<CompiledStep>;
    return executor(step, stepContext(host, wf, path, scope, signal, opts, rec));
  });
  // An agent item that skipped itself (ktsu_skip_reason): its entry is its skip object.
  if (outcome.status === "skipped") {
    return { status: "complete", output: recordSkip(host, path, rec, finish, outcome.reason, effect) };
  }
  if (outcome.status === "failed") return { status: "failed", error: rec.error ?? outcome.error };
  return outcome;
}

/** A workflow step's tokens, cost, calls and attempts are its children's (its duration is its own). */
function aggregateChildMetrics(host: RunHost, child: CompiledWorkflow, prefix: string, rec: StepRecord) {
  for (const s of child.steps) {
    const r = host.records.get(prefix + s.id);
    // A child step a re-run reused was paid for by the run it executed in.
    if (r && !r.reused_from) addMetrics(rec, r);
  }
}
