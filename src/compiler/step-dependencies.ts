/**
 * The dependency graph of one pipeline: each step's ancestors (the transitive closure over its
 * `depends_on` and the implicit previous-step edges: exactly the steps whose outputs `step.X` may
 * read), pipeline order, and its cycles, each reported once at its first-listed step.
 */

export function byIndex(indexOf: Map<string, number>) {
  return (a: string, b: string) => (indexOf.get(a) ?? 0) - (indexOf.get(b) ?? 0);
}

export function closure(i: number, deps: string[][], indexOf: Map<string, number>): Set<string> {
  const seen = new Set<string>();
  const stack = [...(deps[i] ?? [])];
  while (stack.length > 0) {
    const id = stack.pop() as string;
    if (seen.has(id)) continue;
    seen.add(id);
    const j = indexOf.get(id);
    if (j !== undefined) stack.push(...(deps[j] ?? []));
  }
  return seen;
}

/** Reports each dependency cycle once, at the first-listed step on it. */
export function reportCycles(
  ids: Array<string | null>,
  deps: string[][],
  indexOf: Map<string, number>,
  report: (index: number, cycle: string[]) => void,
): void {
  const state = new Map<number, "active" | "done">();
  const reported = new Set<string>();
  const visit = (i: number, stack: number[]) => {
    state.set(i, "active");
    stack.push(i);
    for (const dep of deps[i] ?? []) {
      const j = indexOf.get(dep);
      if (j === undefined) continue;
      if (state.get(j) === "active") {
        const cycle = stack.slice(stack.indexOf(j));
        const first = Math.min(...cycle);
        const key = [...cycle].sort((a, b) => a - b).join(",");
        if (!reported.has(key)) {
          reported.add(key);
          // Read the cycle starting at its first-listed step, following depends_on.
          const start = cycle.indexOf(first);
          const ordered = [...cycle.slice(start), ...cycle.slice(0, start), first];
          report(
            first,
            ordered.map((k) => ids[k] ?? `#${k + 1}`),
          );
        }
      } else if (!state.has(j)) {
        visit(j, stack);
      }
    }
    stack.pop();
    state.set(i, "done");
  };
  ids.forEach((_, i) => {
    if (!state.has(i)) visit(i, []);
  });
}
