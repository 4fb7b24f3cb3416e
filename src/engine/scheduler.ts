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
  type CompiledStep,
  type CompiledWorkflow,
  type ForEach,
  forEachOf,
  hasEffect,
  type Json,
  type JsonObject,
  type JsonSchema,
  STEP_KIND_TRAITS,
  type WorkflowStep,
} from "../bundle.ts";
import { systemClock } from "./clock.ts";
import { evaluate, isTruthy } from "./expressions.ts";
import { addMetrics, type FanOutItem, type ItemOutcome, runFanOut } from "./fan-out.ts";
import { type PipelineOptions, RunAbort, type RunHost } from "./run-host.ts";
import { describeViolations, validateJson } from "./schema.ts";
import { exprScores, stepWithArm } from "./scores.ts";
import { stepContext } from "./step-context.ts";
import {
  checkOutputSchema,
  pendingRecord,
  recordable,
  recordSkip,
  resumedStart,
  startRecord,
  toStepError,
} from "./step-records.ts";
import { markSkipped } from "./step-status.ts";
import { render } from "./substitute.ts";
import {
  type EvalScope,
  emptyMetrics,
  StepError,
  type StepExecutor,
  type StepRecord,
  StepSkipped,
} from "./types.ts";

const FINISHED = new Set(["complete", "skipped"]);

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
  const resumedFrom = resumedStart(rec);
  host.records.set(path, rec);
  rec.finished_at = null;
  rec.error = null;
  rec.output = null;
  rec.metrics = emptyMetrics();
  rec.tool_calls = [];
  rec.annotations = null;
  const finish = startRecord(host, path, rec, resumedFrom);
  // A webhook or agent step reaches outside the run; a fan-out's items carry their own effects.
  const effect = hasEffect(step);
  const forEach = forEachOf(step);
  const skip = (reason: string, executed = false) => {
    if (step.kind === "workflow") skipChildTree(host, step, `${path}/`, reason);
    return recordSkip(host, path, rec, finish, reason, executed && effect);
  };

  const scope = scopeFor(step, opts, outputs);
  // A split step runs its arm (chosen once, at its start, and recorded on the step).
  const armed =
    step.kind === "agent" && step.variants
      ? stepWithArm(step, path, scope, host.runId, host.pinnedArm?.(path) ?? null)
      : step;
  if (armed !== step) rec.variant = (armed as { armName?: string }).armName ?? null;
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
      return executor(armed, stepContext(host, wf, path, scope, signal, opts, rec));
    },
    // A transform checks its output.schema on its result, in its executor.
    STEP_KIND_TRAITS[step.kind].output !== "result" && step.outputSchema
      ? (output) => checkOutputSchema(step.outputSchema as JsonSchema, output)
      : undefined,
    // Its `expr` scorers, on the output as recorded, before the record is kept.
    step.score
      ? (output) => {
          rec.scores = exprScores(
            step.score ?? [],
            { output, params: scope.params, step: scope.step },
            new Date(host.now()).toISOString(),
          );
        }
      : undefined,
  );
  // An agent that skipped itself (ktsu_skip_reason) called its model: that is an effect.
  if (outcome.status === "skipped") return skip(outcome.reason, true);
  return settledStep(step, outcome);
}

/**
 * A step's outcome as its pipeline sees it: its output, or the error that stops the pipeline. A
 * failed step with `on_error: continue` stays recorded `failed`, and its dependents read
 * `{"error": {code, message}}` as its output (docs/file-format.md); a stop from outside still stops.
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
  scored?: (output: Json) => void,
): Promise<Executed> {
  try {
    if (signal.aborted) throw signal.reason;
    let output = await body();
    if (signal.aborted) throw signal.reason;
    check?.(output);
    output = recordable(host, output);
    rec.output = output;
    scored?.(output);
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
  const resumedFrom = resumedStart(host.records.get(path));
  const rec = pendingRecord(String(item.index));
  host.records.set(path, rec);
  const finish = startRecord(host, path, rec, resumedFrom);
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
