/**
 * The one writer of a step record's status (and of what goes with it: times, a skip's output).
 * The scheduler starts, holds and finishes steps through it; the run's end settles what never
 * finished through it; the view of a run just woken from storage reads what holds a step through
 * it. No other module assigns a step's status (test/engine/step-status.test.ts checks the source).
 *
 *   pending ─▶ running ─▶ complete | failed | skipped | canceled
 *                 │  ▲
 *                 ▼  │   pending_approval (a human decides), waiting (a signal, the clock)
 *   pending ─▶ skipped (its condition, a failed or canceled run, suppressed webhooks)
 *   running, pending_approval, waiting ─▶ canceled (the run ended first)
 */
import type { Json } from "../bundle.ts";
import { emptyMetrics, type StepRecord, type StepStatus } from "./types.ts";

/** Statuses after which nothing writes to the record again. */
export const SETTLED: ReadonlySet<StepStatus> = new Set(["complete", "failed", "skipped", "canceled"]);
/** A step under way: running, or waiting for a human or the world. */
export const IN_FLIGHT: ReadonlySet<StepStatus> = new Set(["running", "pending_approval", "waiting"]);

/** The step (or fan-out item) starts running at `startedAt`. */
export function markRunning(rec: StepRecord, startedAt: string): void {
  rec.status = "running";
  rec.started_at = startedAt;
}

/** A step resumed after an eviction began earlier than this incarnation started it: it keeps the earliest start. */
export function markStartedAt(rec: StepRecord, startedAt: string): void {
  if (rec.started_at === null || startedAt < rec.started_at) rec.started_at = startedAt;
}

/** It ended with `status` at `finishedAt`, `durationMs` after it started. */
export function markFinished(
  rec: StepRecord,
  status: StepStatus,
  finishedAt: string,
  durationMs: number,
): void {
  rec.status = status;
  rec.finished_at = finishedAt;
  rec.metrics.duration_ms = durationMs;
}

/** It was skipped: its output is the skip object wherever it is read. */
export function markSkipped(rec: StepRecord, reason: string): Json {
  rec.status = "skipped";
  rec.output = { skipped: true, reason };
  return rec.output;
}

/** A running step starts waiting (for a human's approval, or a signal or the clock); false if it was not running. */
export function markHeld(rec: StepRecord, status: "pending_approval" | "waiting"): boolean {
  if (rec.status !== "running") return false;
  rec.status = status;
  return true;
}

/** A step that waited for a human runs again (no approval of it waits any more); false if it was not waiting. */
export function markResumed(rec: StepRecord): boolean {
  if (rec.status !== "pending_approval") return false;
  rec.status = "running";
  return true;
}

/**
 * The run ended: a step still under way is canceled at `now` (its record a copy, so a late result
 * cannot change it), one that never started is skipped for `skipReason`. Settled records are
 * returned as they are.
 */
export function markRunEnded(current: StepRecord, now: number, skipReason: string): StepRecord {
  if (SETTLED.has(current.status)) return current;
  const rec = structuredClone(current);
  if (IN_FLIGHT.has(rec.status)) {
    rec.status = "canceled";
    rec.output = null;
    rec.finished_at = new Date(now).toISOString();
    if (rec.started_at) rec.metrics.duration_ms = now - Date.parse(rec.started_at);
  } else if (rec.status === "pending") {
    markSkipped(rec, skipReason);
  }
  return rec;
}

/**
 * Records as a run woken from storage shows them before its steps have asked again: a step whose
 * wait is waiting shows `waiting`, a step with a pending approval (and every step above it)
 * `pending_approval`. `held` says what storage holds; unchanged records are shared.
 */
export function heldRecords(
  records: ReadonlyMap<string, StepRecord>,
  held: { approvals: readonly string[]; waits: readonly string[] },
): ReadonlyMap<string, StepRecord> {
  if (held.approvals.length === 0 && held.waits.length === 0) return records;
  const view = new Map(records);
  for (const path of held.waits) {
    const rec = view.get(path);
    if (rec && rec.status === "running") view.set(path, { ...rec, status: "waiting" });
  }
  for (const path of held.approvals.flatMap((p) => [p, ...ancestorPaths(p)])) {
    const rec = view.get(path);
    if (rec && rec.status !== "pending_approval" && !SETTLED.has(rec.status)) {
      view.set(path, { ...rec, status: "pending_approval" });
    }
  }
  return view;
}

/** The record as it was when the step started (a replayed `step.started`): running, nothing of its outcome. */
export function asStarted(rec: StepRecord): StepRecord {
  return { ...rec, status: "running", output: null, error: null, finished_at: null, metrics: emptyMetrics() };
}

/** `a/b/c` → `a/b`, `a`: the steps (workflow steps, fan-outs, items) a path sits under. */
export function ancestorPaths(path: string): string[] {
  const out: string[] = [];
  for (let i = path.lastIndexOf("/"); i > 0; i = path.lastIndexOf("/", i - 1)) out.push(path.slice(0, i));
  return out;
}
