/**
 * Which steps a re-run executes again and which it reuses (docs/http-api.md). A re-run is a new run whose
 * step records start with the old run's reusable ones: the engine treats a finished record it
 * is handed as done (the same path that resumes a run after an eviction), so a reused step sends
 * no request, calls no model and charges nothing to the new run's budget.
 *
 * At each level (the root pipeline, then inside a sub-workflow step that runs again because a
 * child of it did not complete) a step runs again when it did not complete in the old run
 * (failed, canceled, pending, or skipped because the run failed or was canceled), when the
 * definition the re-run uses has no step of that id and kind, when it is `from` (or on its
 * path), or when it depends on a step that runs again. A sub-workflow step that runs again
 * because of what it depends on, or because it is `from` itself, runs its whole child again;
 * a fan-out step that runs again runs all of its items again (its item list may differ).
 */
import { type Bundle, type CompiledWorkflow, isFanOut } from "../../bundle.ts";
import type { StepRecord } from "../../engine/types.ts";

export type RerunPlan =
  | { outcome: "planned"; reused: Array<[string, StepRecord]> }
  | { outcome: "unknown_step" };

/** Skip reasons that say the step never got its turn (the run ended first). */
const ENDED_FIRST = new Set(["run_failed", "run_canceled"]);

/** Whether a record of the old run can stand for the step in the re-run. */
function reusable(rec: StepRecord | undefined): rec is StepRecord {
  if (!rec) return false;
  if (rec.status === "complete") return true;
  if (rec.status !== "skipped") return false;
  const reason = (rec.output as { reason?: unknown } | null)?.reason;
  return !(typeof reason === "string" && ENDED_FIRST.has(reason));
}

/**
 * Plans a re-run of `oldRunId` (its definition `oldDef`, root `oldKey`, records `records`) on
 * `def`/`key` (the same pinned definition, or the one deployed now). `from`: a step path
 * (`a` or `parent/child`), or null.
 */
export function planRerun(
  old: { runId: string; def: Bundle; key: string; records: ReadonlyMap<string, StepRecord> },
  def: Bundle,
  key: string,
  from: string | null,
): RerunPlan {
  const reused: Array<[string, StepRecord]> = [];
  const fromPath = from === null ? null : from.split("/");
  const ok = planLevel(def.workflows[key], old.def.workflows[old.key], "", fromPath);
  return ok ? { outcome: "planned", reused } : { outcome: "unknown_step" };

  /** Plans one pipeline; false when `fromRest` names no step of it. */
  function planLevel(
    wf: CompiledWorkflow | undefined,
    oldWf: CompiledWorkflow | undefined,
    prefix: string,
    fromRest: string[] | null,
  ): boolean {
    if (!wf) return fromRest === null;
    const again = new Set<string>();
    /** Steps that run again whose own children may still be reused. */
    const partly = new Map<string, string[] | null>();
    const head = fromRest?.[0];
    if (head !== undefined) {
      const target = wf.steps.find((s) => s.id === head);
      if (!target) return false;
      again.add(head);
      const rest = fromRest?.slice(1) ?? [];
      if (rest.length > 0) {
        if (target.kind !== "workflow" || isFanOut(target)) return false;
        partly.set(head, rest);
      }
    }
    for (const s of wf.steps) {
      const was = oldWf?.steps.find((o) => o.id === s.id);
      const sameKind = was !== undefined && was.kind === s.kind && isFanOut(was) === isFanOut(s);
      if (sameKind && reusable(old.records.get(prefix + s.id))) continue;
      again.add(s.id);
      // A sub-workflow step that did not complete: its completed children may be reused.
      if (sameKind && s.kind === "workflow" && !isFanOut(s) && !partly.has(s.id)) partly.set(s.id, null);
    }
    // Everything downstream of a step that runs again runs again, whole.
    for (let grew = true; grew; ) {
      grew = false;
      for (const s of wf.steps) {
        if (again.has(s.id) || !s.deps.some((d) => again.has(d))) continue;
        again.add(s.id);
        grew = true;
      }
    }
    for (const s of wf.steps) {
      const path = prefix + s.id;
      if (!again.has(s.id)) {
        keep(path);
        continue;
      }
      const upstreamAgain = s.deps.some((d) => again.has(d));
      const childFrom = partly.get(s.id);
      if (s.kind !== "workflow" || !partly.has(s.id)) continue;
      // `from` itself, or a step whose inputs change, runs its child whole.
      if (upstreamAgain || (head === s.id && childFrom === null)) continue;
      const oldStep = oldWf?.steps.find((o) => o.id === s.id);
      const oldChild = oldStep?.kind === "workflow" ? old.def.workflows[oldStep.workflow] : undefined;
      if (!planLevel(def.workflows[s.workflow], oldChild, `${path}/`, childFrom ?? null)) return false;
    }
    return true;
  }

  /** Keeps the record at `path` and every record under it (children, fan-out items). */
  function keep(path: string): void {
    for (const [p, rec] of old.records) {
      if (p !== path && !p.startsWith(`${path}/`)) continue;
      reused.push([p, { ...rec, reused_from: rec.reused_from ?? old.runId }]);
    }
  }
}
