/**
 * Which steps a run that ended failed or canceled undoes, in which order, and with what they read
 * (docs/file-format.md, "Compensation"). Pure: rebuilt from the pinned definition and the final
 * step records whenever it is needed (after an eviction too), so nothing of it but the progress
 * (run-doc.ts, `compensation`) is stored.
 *
 * Every step that completed in this run and declares `compensate:` is undone, latest completion
 * first; a fan-out's completed items each (an item's `output`, `item` and `item_index`); a
 * sub-workflow step's own steps before the workflow step's own `compensate:`. A failed, canceled,
 * skipped or unfinished step did not complete and is not undone; nor is a step a re-run reused
 * (its earlier run undoes it).
 */
import {
  type Bundle,
  type CompiledCompensation,
  type CompiledStep,
  type CompiledWorkflow,
  forEachOf,
  type Json,
  type JsonObject,
} from "../../bundle.ts";
import { fanOutItems } from "../../engine/fan-out.ts";
import { render } from "../../engine/substitute.ts";
import type { EvalScope, StepRecord } from "../../engine/types.ts";
import type { Compensation } from "../run-doc.ts";

/** One compensation to run: the step, where it ran, and what its templates read. */
export interface PlannedCompensation {
  /** The compensated step's path (a fan-out item's `<step>/<index>`). */
  path: string;
  compensate: CompiledCompensation;
  /** The workflow the step belongs to. */
  wf: CompiledWorkflow;
  /** What the step read (`item`, `item_index` for a fan-out item), plus its `output`. */
  scope: EvalScope;
}

interface Unit {
  finishedAt: number;
  order: number;
  entries: PlannedCompensation[];
}

/** The run's compensations in the order they run (empty: nothing to undo). */
export function compensationPlan(
  def: Bundle,
  root: CompiledWorkflow,
  records: ReadonlyMap<string, StepRecord>,
  base: { params: Json; request: Json; env: JsonObject },
): PlannedCompensation[] {
  return level(def, root, "", records, {
    params: base.params,
    env: base.env,
    step: {},
    request: base.request,
  });
}

/** The progress record of a plan before any compensation ran (null: nothing to undo). */
export function newCompensation(plan: PlannedCompensation[]): Compensation | null {
  if (plan.length === 0) return null;
  return {
    status: "running",
    steps: plan.map((p) => ({
      step: p.path,
      status: "pending",
      attempts: 0,
      error: null,
      started_at: null,
      finished_at: null,
    })),
  };
}

function completed(rec: StepRecord | undefined): rec is StepRecord {
  return rec !== undefined && rec.status === "complete" && !rec.reused_from;
}

function finishedMs(rec: StepRecord): number {
  return rec.finished_at ? Date.parse(rec.finished_at) : 0;
}

/** One pipeline's compensations, latest completion first (`scope`: its params, env, request). */
function level(
  def: Bundle,
  wf: CompiledWorkflow,
  prefix: string,
  records: ReadonlyMap<string, StepRecord>,
  scope: EvalScope,
): PlannedCompensation[] {
  // Everything the pipeline's steps produced: a step reads its ancestors' outputs (the compiler
  // allows no other), all of which finished before it.
  const outputs: JsonObject = {};
  for (const s of wf.steps) {
    const rec = records.get(prefix + s.id);
    if (rec && (rec.status === "complete" || rec.status === "skipped" || rec.status === "failed"))
      outputs[s.id] = rec.output;
  }
  const stepScope: EvalScope = { ...scope, step: outputs };
  const units: Unit[] = [];
  wf.steps.forEach((s, order) => {
    const path = prefix + s.id;
    const rec = records.get(path);
    if (!rec) return;
    const forEach = forEachOf(s);
    if (!forEach) {
      const entries = unitOf(def, wf, s, path, rec, records, stepScope);
      if (entries.length > 0) units.push({ finishedAt: finishedMs(rec), order, entries });
      return;
    }
    let items: Json[] | null = null;
    for (let i = 0; records.has(`${path}/${i}`); i++) {
      const item = records.get(`${path}/${i}`) as StepRecord;
      if (!s.compensate && s.kind !== "workflow") continue;
      if (items === null) {
        try {
          items = fanOutItems(forEach, stepScope);
        } catch {
          items = [];
        }
      }
      const itemScope: EvalScope = { ...stepScope, item: items[i] ?? null, item_index: i };
      const entries = unitOf(def, wf, s, `${path}/${i}`, item, records, itemScope);
      if (entries.length > 0) units.push({ finishedAt: finishedMs(item), order, entries });
    }
  });
  // Latest completion first; at the same instant, later in the pipeline first.
  units.sort((a, b) => b.finishedAt - a.finishedAt || b.order - a.order);
  return units.flatMap((u) => u.entries);
}

/** A step (or one fan-out item) as a unit: a sub-workflow's own steps first, then its own compensation. */
function unitOf(
  def: Bundle,
  wf: CompiledWorkflow,
  s: CompiledStep,
  path: string,
  rec: StepRecord,
  records: ReadonlyMap<string, StepRecord>,
  scope: EvalScope,
): PlannedCompensation[] {
  const out: PlannedCompensation[] = [];
  if (s.kind === "workflow" && !rec.reused_from) {
    const child = def.workflows[s.workflow];
    if (child) {
      let params: Json = null;
      try {
        params = render(s.input, scope);
      } catch {
        params = null;
      }
      // Its completed steps did what they did, whether or not the sub-workflow completed.
      out.push(...level(def, child, `${path}/`, records, { params, env: {}, step: {} }));
    }
  }
  if (s.compensate && completed(rec))
    out.push({ path, compensate: s.compensate, wf, scope: { ...scope, output: rec.output } });
  return out;
}
