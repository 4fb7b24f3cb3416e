/**
 * How a run ends, as data: the final step records (whatever was still running is `canceled`,
 * whatever never started is `skipped`) and the run's error. Pure, so the run Durable Object and
 * the workflow test runner (src/testing) end a run the same way.
 */
import type { Bundle, CompiledWorkflow, Json } from "../../bundle.ts";
import type { Masker } from "../../engine/mask.ts";
import { pendingRecord } from "../../engine/step-records.ts";
import { IN_FLIGHT, markRunEnded } from "../../engine/step-status.ts";
import { StepError, type StepRecord } from "../../engine/types.ts";
import type { RunError } from "../run-doc.ts";
import { forEachRecordPath } from "../run-graph.ts";

/**
 * The final record of every step of `wf` and its sub-workflows (and of every started fan-out
 * item) at `now`. Records still in flight
 * are copies, so late results of aborted steps cannot change them; `skipReason` is given to
 * steps that never started (`run_failed`, `run_canceled`).
 */
export function settleRecords(
  def: Bundle,
  wf: CompiledWorkflow,
  records: ReadonlyMap<string, StepRecord>,
  now: number,
  skipReason: string,
  /** Masks the tool calls of steps cut short (finished ones were masked by the scheduler). */
  masker?: Masker,
): Map<string, StepRecord> {
  const finalRecords = new Map<string, StepRecord>();
  forEachRecordPath(def, wf, records, (path, id) => {
    const current = records.get(path) ?? pendingRecord(id);
    // Inside a skipped workflow step the steps share its reason (condition_false, ...).
    const parent = finalRecords.get(path.slice(0, path.lastIndexOf("/")));
    const inherited =
      parent?.status === "skipped" ? (parent.output as { reason?: string } | null)?.reason : null;
    // Only records still in flight can be touched by late results (they become copies); finished
    // ones are final already, and cloning them costs a structured clone per step of every run.
    const rec = markRunEnded(current, now, inherited ?? skipReason);
    if (rec !== current && rec.status === "canceled" && masker && rec.tool_calls?.length) {
      rec.tool_calls = masker.maskJson(
        rec.tool_calls as unknown as Json,
      ) as unknown as StepRecord["tool_calls"];
    }
    finalRecords.set(path, rec);
  });
  return finalRecords;
}

/** The run's error when its deadline passed: it names the step that was running, if any. */
export function deadlineError(wf: CompiledWorkflow, records: ReadonlyMap<string, StepRecord>): RunError {
  // A step whose own deadline handling beat the alarm is already `canceled`: it is the one too.
  const running =
    [...records.entries()].find(([, r]) => IN_FLIGHT.has(r.status) || r.status === "canceled")?.[0] ?? null;
  return {
    code: "timeout",
    message: `the run reached its deadline (timeout_s = ${wf.policy.timeoutS})`,
    step: running,
  };
}

/** The run's error when its pipeline failed with `err` (masked: it is recorded). */
export function failureError(err: unknown, masker: Masker): RunError {
  const e = err instanceof StepError ? err : new StepError("internal_error", String(err));
  return { code: e.code, message: masker.maskText(e.message), step: e.subPath };
}
