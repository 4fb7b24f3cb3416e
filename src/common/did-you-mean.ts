/**
 * "Did you mean X?" hints for unknown names: fields, step ids, agents and groups in the compiler,
 * workflow names in the Worker's 404. A typo is the most common mistake in a workflow file or a
 * URL, and the fix is obvious once the intended name is shown next to it.
 */

/** Optimal string alignment distance: Levenshtein plus adjacent transpositions (`dpeends`). */
export function editDistance(a: string, b: string): number {
  const rows = a.length + 1;
  const cols = b.length + 1;
  const d: number[][] = Array.from({ length: rows }, (_, i) =>
    Array.from({ length: cols }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  const at = (i: number, j: number): number => d[i]?.[j] ?? 0;
  for (let i = 1; i < rows; i++) {
    for (let j = 1; j < cols; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let v = Math.min(at(i - 1, j) + 1, at(i, j - 1) + 1, at(i - 1, j - 1) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        v = Math.min(v, at(i - 2, j - 2) + 1);
      const row = d[i];
      if (row) row[j] = v;
    }
  }
  return at(a.length, b.length);
}

/** The closest candidate, if it is close enough to be a plausible typo; compares case-insensitively. */
export function closest(name: string, candidates: Iterable<string>): string | null {
  const lower = name.toLowerCase();
  let best: string | null = null;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const c of candidates) {
    const dist = editDistance(lower, c.toLowerCase());
    if (dist < bestDistance) {
      best = c;
      bestDistance = dist;
    }
  }
  if (best === null) return null;
  const limit = Math.max(1, Math.min(3, Math.floor(Math.max(name.length, best.length) / 3)));
  return bestDistance <= limit ? best : null;
}

/** `; did you mean \`X\`?` or "" when nothing is close. */
export function hint(name: string, candidates: Iterable<string>): string {
  const c = closest(name, candidates);
  return c === null ? "" : `; did you mean \`${c}\`?`;
}
