/**
 * Fan-out (`for_each`, docs/file-format.md): one step run once per item of an array, as child records
 * of the step (paths `analyze/0`, `analyze/1`, ...), the way a sub-workflow's steps are. This
 * module owns what is particular to a fan-out: reading the array, the item limits, starting
 * items in index order with at most `concurrency` in flight (never more than the run's outbound
 * limit), counting failures against `max_failures` and stopping at once when they exceed it, the
 * `{"results": [...]}` output in input order, and the step's metrics as the sums of its items'.
 *
 * How one item runs (its record, executor, masking) is the scheduler's business: it hands in
 * `runItem`. Items finished by an earlier incarnation of the run (restored records) are never run
 * again: an evicted run repeats only the items that were in flight.
 */
import type { ForEach, Json, JsonObject } from "../bundle.ts";
import { addUsd } from "./budget.ts";
import { evaluate } from "./expressions.ts";
import { expressionData } from "./substitute.ts";
import { type EvalScope, RUN_FATAL_CODES, StepError, type StepErrorCode, type StepRecord } from "./types.ts";

/** Items per fan-out (also the largest `max_items`). */
export const MAX_FANOUT_ITEMS = 1000;
/** Items in flight when the host names no outbound limit (the Workers connection limit). */
export const DEFAULT_OUTBOUND_LIMIT = 6;

/** What the fan-out needs of the run (a subset of the scheduler's RunHost). */
export interface FanOutHost {
  restored: ReadonlyMap<string, StepRecord>;
  records: Map<string, StepRecord>;
  /** Outbound requests a run may have in flight; items in flight never exceed it. */
  outboundLimit?: number;
}

/** One item to run: its index, value, slash path and the signal that cancels it. */
export interface FanOutItem {
  index: number;
  value: Json;
  path: string;
  signal: AbortSignal;
}

/** How an item ended. `canceled`: stopped from outside; `reason` is what the step rethrows. */
export type ItemOutcome =
  | { status: "complete"; output: Json }
  | { status: "failed"; error: { code: string; message: string } }
  | { status: "canceled"; reason: unknown };

export interface FanOut {
  /** Slash path of the fan-out step; item `i` is `${path}/${i}`. */
  path: string;
  forEach: ForEach;
  /** The step's scope: what `from` reads. */
  scope: EvalScope;
  /** The step's record: its metrics become the sums of its items'. */
  record: StepRecord;
  signal: AbortSignal;
  runItem(item: FanOutItem): Promise<ItemOutcome>;
}

/** Why the fan-out canceled its own in-flight items (too many failures). */
class FanOutStopped extends Error {
  constructor() {
    super("the fan-out stopped: too many items failed");
    this.name = "FanOutStopped";
  }
}

/** `skipped`: an agent item that skipped itself (`ktsu_skip_reason`); its output is its skip object. */
const ITEM_FINISHED = new Set(["complete", "skipped", "failed"]);

/** Indices of the item records of the fan-out step at `stepPath`, in order. */
export function fanOutItemIndices(records: ReadonlyMap<string, StepRecord>, stepPath: string): number[] {
  const prefix = `${stepPath}/`;
  const out: number[] = [];
  for (const path of records.keys()) {
    if (!path.startsWith(prefix)) continue;
    const rest = path.slice(prefix.length);
    if (/^(0|[1-9][0-9]*)$/.test(rest)) out.push(Number(rest));
  }
  return out.sort((a, b) => a - b);
}

function typeName(v: Json): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "an array";
  return typeof v === "object" ? "an object" : `a ${typeof v}`;
}

/** The items `from` gives, after `max_items`; StepError when it is not an array or too long. */
export function fanOutItems(forEach: ForEach, scope: EvalScope): Json[] {
  const value = evaluate(forEach.from, expressionData(scope));
  if (!Array.isArray(value)) {
    throw new StepError(
      "expression_error",
      `for_each.from \`${forEach.from}\` gave ${typeName(value)}, not an array`,
    );
  }
  if (forEach.maxItems !== null) return value.slice(0, forEach.maxItems);
  if (value.length > MAX_FANOUT_ITEMS) {
    throw new StepError(
      "too_many_items",
      `for_each.from gave ${value.length} items; a fan-out takes at most ${MAX_FANOUT_ITEMS} (set for_each.max_items to keep the first N)`,
    );
  }
  return value;
}

function failureEntry(index: number, error: { code: string; message: string }): JsonObject {
  return { ktsu_error: `${error.code}: ${error.message}`, item_index: index };
}

/**
 * Runs the fan-out and returns `{"results": [...]}`. Throws StepError (`expression_error`,
 * `too_many_items`, `fanout_failed`) or, when stopped from outside, what the canceled item gave.
 */
export async function runFanOut(host: FanOutHost, f: FanOut): Promise<Json> {
  const items = fanOutItems(f.forEach, f.scope);
  const results: Json[] = new Array(items.length).fill(null);
  const failed: Array<{ index: number; error: { code: string; message: string } }> = [];
  const exceeded = () => f.forEach.maxFailures >= 0 && failed.length > f.forEach.maxFailures;

  // Items an earlier incarnation finished keep their record and are not run again.
  const todo: number[] = [];
  items.forEach((_, i) => {
    const path = `${f.path}/${i}`;
    const rec = host.restored.get(path);
    if (rec && ITEM_FINISHED.has(rec.status)) {
      host.records.set(path, rec);
      addMetrics(f.record, rec);
      if (rec.status === "complete" || rec.status === "skipped") results[i] = rec.output;
      else {
        const error = rec.error ?? { code: "internal_error", message: "the item failed" };
        failed.push({ index: i, error });
        results[i] = failureEntry(i, error);
      }
    } else {
      todo.push(i);
    }
  });

  const limit = Math.max(
    1,
    Math.min(f.forEach.concurrency ?? items.length, host.outboundLimit ?? DEFAULT_OUTBOUND_LIMIT),
  );
  // Aborting this cancels the items in flight (too many failures, or the run stopping).
  const local = new AbortController();
  const onOuter = () => local.abort(f.signal.reason);
  if (f.signal.aborted) onOuter();
  else f.signal.addEventListener("abort", onOuter, { once: true });

  const running = new Set<Promise<void>>();
  let stop: { reason: unknown } | null = exceeded() ? { reason: new FanOutStopped() } : null;
  try {
    await new Promise<void>((resolve) => {
      let next = 0;
      const pump = () => {
        while (stop === null && running.size < limit && next < todo.length) {
          const index = todo[next++] as number;
          const p: Promise<void> = f
            .runItem({ index, value: items[index] as Json, path: `${f.path}/${index}`, signal: local.signal })
            .then(
              (outcome) => settle(index, outcome),
              (err: unknown) => settle(index, { status: "canceled", reason: err }),
            )
            .finally(() => {
              running.delete(p);
              pump();
            });
          running.add(p);
        }
        if (running.size === 0) resolve();
      };
      const settle = (index: number, outcome: ItemOutcome) => {
        // The step's sums grow as items finish, so a run read mid-fan-out counts them already.
        const rec = host.records.get(`${f.path}/${index}`);
        if (rec) addMetrics(f.record, rec);
        if (outcome.status === "complete") {
          results[index] = outcome.output;
        } else if (outcome.status === "failed") {
          failed.push({ index, error: outcome.error });
          results[index] = failureEntry(index, outcome.error);
          if (stop === null && RUN_FATAL_CODES.has(outcome.error.code)) {
            // An injection attempt fails the run whatever max_failures tolerates (docs/agents-and-tools.md).
            const fatal = new StepError(outcome.error.code as StepErrorCode, outcome.error.message);
            stop = { reason: fatal };
            local.abort(fatal);
          } else if (stop === null && exceeded()) {
            stop = { reason: new FanOutStopped() };
            local.abort(stop.reason);
          }
        } else if (stop === null) {
          // Canceled from outside (deadline, cancel, a sibling step failed): the fan-out stops too.
          stop = { reason: outcome.reason };
          local.abort(outcome.reason);
        }
      };
      if (local.signal.aborted && stop === null) stop = { reason: local.signal.reason };
      pump();
    });
  } finally {
    f.signal.removeEventListener("abort", onOuter);
  }

  if (stop !== null && !(stop.reason instanceof FanOutStopped)) throw stop.reason;
  if (exceeded()) {
    const first = [...failed].sort((a, b) => a.index - b.index)[0] as (typeof failed)[number];
    const allowed =
      f.forEach.maxFailures === 0
        ? "max_failures: 0, fail on the first"
        : `max_failures: ${f.forEach.maxFailures}`;
    throw new StepError(
      "fanout_failed",
      `${failed.length} of ${items.length} items failed (${allowed}); first: item ${first.index}: ${first.error.code}: ${first.error.message}`,
    );
  }
  return { results };
}

/**
 * Adds a part's tokens, cost, calls and attempts to `whole`: a fan-out step's are its items' sums,
 * a workflow step's its children's (a step's duration is its own wall time).
 */
export function addMetrics(whole: StepRecord, part: StepRecord): void {
  const m = whole.metrics;
  m.tokens_in += part.metrics.tokens_in;
  m.tokens_out += part.metrics.tokens_out;
  m.cost_usd = addUsd(m.cost_usd, part.metrics.cost_usd);
  m.llm_calls += part.metrics.llm_calls;
  m.attempts += part.metrics.attempts;
  m.tool_calls += part.metrics.tool_calls ?? 0;
}
