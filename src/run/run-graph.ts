/**
 * A run's definition as a graph: the nodes the viewer draws (runGraph), and every step path of a
 * run in pipeline order, parents before children, fan-out items after their step (the order the
 * envelope, the event history and the settling of a run's end walk).
 */
import {
  type Bundle,
  type CompiledStep,
  type CompiledWorkflow,
  type ForEach,
  forEachOf,
  isFanOut,
} from "../bundle.ts";
import { fanOutItemIndices } from "../engine/fan-out.ts";
import type { StepRecord } from "../engine/types.ts";

export interface GraphNode {
  /** Slash path, e.g. `notify/post`. */
  path: string;
  id: string;
  kind: CompiledStep["kind"];
  /** Paths of the direct dependencies (same pipeline). */
  deps: string[];
  /** Path of the enclosing workflow step, or null at the top level. */
  parent: string | null;
  condition: string | null;
  /** A wait step's wait: the signal it waits for (or null for a sleep), or null for other kinds. */
  wait: { signal: string | null; keyed: boolean; timeout_s: number | null; for_s: number | null } | null;
  /** The step's `for_each` (its items are records under its path, not graph nodes), or null. */
  for_each: {
    from: string;
    concurrency: number | null;
    max_items: number | null;
    max_failures: number;
  } | null;
}

function forEachGraph(f: ForEach | null): GraphNode["for_each"] {
  return (
    f && { from: f.from, concurrency: f.concurrency, max_items: f.maxItems, max_failures: f.maxFailures }
  );
}

/** The dependency graph of a run's pinned definition, for the viewer. */
export function runGraph(
  def: Bundle,
  wf: CompiledWorkflow,
  prefix = "",
  parent: string | null = null,
): GraphNode[] {
  const nodes: GraphNode[] = [];
  for (const s of wf.steps) {
    const path = prefix + s.id;
    nodes.push({
      path,
      id: s.id,
      kind: s.kind,
      deps: s.deps.map((d) => prefix + d),
      parent,
      condition: s.condition,
      wait:
        s.kind === "wait"
          ? {
              signal: s.signal?.name ?? null,
              keyed: s.signal?.key != null,
              timeout_s: s.signal?.timeoutS ?? null,
              for_s: s.forS,
            }
          : null,
      for_each: forEachGraph(forEachOf(s)),
    });
    const child = s.kind === "workflow" && !s.forEach ? def.workflows[s.workflow] : undefined;
    if (child) nodes.push(...runGraph(def, child, `${path}/`, path));
  }
  return nodes;
}

/**
 * Visits every step of `wf` and of its sub-workflows, parents first, in pipeline order. Fan-out
 * items exist only as records: with `records`, the started items of each fan-out step (and a
 * workflow item's child steps) are visited after the step, in index order.
 */
export function forEachStepPath(
  def: Bundle,
  wf: CompiledWorkflow,
  visit: (path: string, id: string) => void,
  prefix = "",
  records?: ReadonlyMap<string, StepRecord>,
) {
  for (const s of wf.steps) {
    const path = prefix + s.id;
    visit(path, s.id);
    const child = s.kind === "workflow" ? def.workflows[s.workflow] : undefined;
    if (isFanOut(s)) {
      if (!records) continue;
      for (const i of fanOutItemIndices(records, path)) {
        visit(`${path}/${i}`, String(i));
        if (child) forEachStepPath(def, child, visit, `${path}/${i}/`, records);
      }
    } else if (child) {
      forEachStepPath(def, child, visit, `${path}/`, records);
    }
  }
}

/** The signal names the `wait` steps of a definition declare (sub-workflows included). */
export function declaredSignals(def: Bundle): Set<string> {
  const names = new Set<string>();
  for (const wf of Object.values(def.workflows))
    for (const s of wf.steps) if (s.kind === "wait" && s.signal) names.add(s.signal.name);
  return names;
}

/** Every step record path of a run, fan-out items included (see forEachStepPath). */
export function forEachRecordPath(
  def: Bundle,
  wf: CompiledWorkflow,
  records: ReadonlyMap<string, StepRecord>,
  visit: (path: string, id: string) => void,
) {
  forEachStepPath(def, wf, visit, "", records);
}
