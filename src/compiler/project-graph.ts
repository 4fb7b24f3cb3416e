/**
 * The graph of workflow files: which file runs which as a sub-workflow. From it come the
 * project-wide facts a single file cannot know: recursion (a sub-workflow cycle), nesting
 * deeper than the runtime allows, which files are used as sub-workflows (and so may not read
 * env), and which run under a parent's cost budget.
 */
import type { DiagnosticSink } from "./diagnostics.ts";
import type { SourceFile } from "./yaml-source.ts";

export const MAX_DEPTH = 8;

export interface Edge {
  from: string;
  /** Index of the `workflow:` step in the parent's pipeline. */
  step: number;
  to: string;
  /** The step's `compensate.workflow` (a compensation run as a sub-workflow), not its own. */
  compensate?: true;
}

export interface GraphFacts {
  /** Display names of the parents of each file (by abs path). */
  usedBy: Map<string, string[]>;
  /** Files that run under a cost budget (their own or an ancestor's). */
  underBudget: Set<string>;
}

export function analyseGraph(
  files: Map<string, SourceFile>,
  roots: string[],
  edges: Edge[],
  hasBudget: (abs: string) => boolean,
  sink: DiagnosticSink,
): GraphFacts {
  const out = new Map<string, Edge[]>();
  for (const e of edges) out.set(e.from, [...(out.get(e.from) ?? []), e]);
  const report = (e: Edge, msg: string) => {
    const f = files.get(e.from);
    if (f)
      sink.error(
        f.display,
        f.at(["pipeline", e.step, ...(e.compensate ? ["compensate"] : []), "workflow"]),
        msg,
      );
  };
  const keyOf = (abs: string) => files.get(abs)?.key ?? abs;

  // Cycles: an edge back to a file still on the DFS stack closes one.
  const back = new Set<Edge>();
  const state = new Map<string, "active" | "done">();
  const visit = (abs: string, stack: string[]) => {
    state.set(abs, "active");
    stack.push(abs);
    for (const e of out.get(abs) ?? []) {
      if (state.get(e.to) === "active") {
        back.add(e);
        const cycle = [...stack.slice(stack.indexOf(e.to)), e.to].map(keyOf);
        report(
          e,
          `sub-workflow cycle: ${cycle.map((c) => `\`${c}\``).join(" -> ")} (a workflow cannot run itself)`,
        );
      } else if (!state.has(e.to)) visit(e.to, stack);
    }
    stack.pop();
    state.set(abs, "done");
  };
  for (const abs of [...roots, ...files.keys()]) if (!state.has(abs)) visit(abs, []);

  // Depth: the root runs at level 0; a workflow step at level 8 may not go further.
  const seen = new Set<string>();
  const descend = (abs: string, depth: number, chain: string[]) => {
    const k = `${abs}@${depth}`;
    if (seen.has(k)) return;
    seen.add(k);
    for (const e of out.get(abs) ?? []) {
      if (back.has(e)) continue;
      const next = [...chain, keyOf(e.to)];
      if (depth + 1 > MAX_DEPTH) {
        report(
          e,
          `sub-workflow nesting deeper than ${MAX_DEPTH} levels: ${next.map((c) => `\`${c}\``).join(" -> ")}`,
        );
        continue;
      }
      descend(e.to, depth + 1, next);
    }
  };
  for (const r of roots) descend(r, 0, [keyOf(r)]);

  const usedBy = new Map<string, string[]>();
  for (const e of edges) {
    const parent = files.get(e.from)?.key ?? e.from;
    const list = usedBy.get(e.to) ?? [];
    if (!list.includes(parent)) list.push(parent);
    usedBy.set(e.to, list);
  }

  const underBudget = new Set<string>([...files.keys()].filter(hasBudget));
  let changed = true;
  while (changed) {
    changed = false;
    for (const e of edges) {
      if (underBudget.has(e.from) && !underBudget.has(e.to)) {
        underBudget.add(e.to);
        changed = true;
      }
    }
  }
  return { usedBy, underBudget };
}
