/**
 * What a step's executor is given (`StepContext`): its scope, signal, deadline, budget, fetch and
 * clock, and the hosts through which it waits — for a human's approval or for a signal or the
 * clock — with the step's status held meanwhile by the one writer (step-status.ts). A workflow
 * or fan-out step above a waiting step shows the same.
 */
import type { CompiledWorkflow } from "../bundle.ts";
import { isObject } from "../common/guards.ts";
import type { PipelineOptions, RunHost } from "./run-host.ts";
import { ancestorPaths, markHeld, markResumed, markStartedAt } from "./step-status.ts";
import { stepSpanId, stepTracer } from "./trace.ts";
import type { ApprovalHost, EvalScope, StepCheckpoint, StepContext, StepRecord, WaitHost } from "./types.ts";

export function stepContext(
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
    checkpoint: checkpointOf(host, path, rec),
    clock: host.clock,
    holdsSecret: (text) => host.masker.maskText(text) !== text,
    trace: host.trace
      ? stepTracer(host.trace.ref, stepSpanId(host.trace.ref.id, path), host.now, host.trace.sink)
      : undefined,
    stream: host.outputStream?.(path),
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
        (startedAt) => markStartedAt(rec, startedAt),
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

/**
 * The step's resumable state (an agent's conversation), carrying when the step first started: a
 * step resumed from it after an eviction keeps that start. A checkpoint saved before checkpoints
 * carried it is read as it is.
 */
function checkpointOf(host: RunHost, path: string, rec: StepRecord): StepCheckpoint | undefined {
  const inner = host.checkpoint?.(path);
  if (!inner) return undefined;
  return {
    load: () => {
      const saved = inner.load();
      if (!isObject(saved) || typeof saved.started_at !== "string" || !("state" in saved)) return saved;
      markStartedAt(rec, saved.started_at);
      return saved.state ?? null;
    },
    save: (state) => inner.save({ started_at: rec.started_at, state }),
  };
}
