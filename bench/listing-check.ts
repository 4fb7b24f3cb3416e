/**
 * The run listing under the bench's load: every run of ours the bench started (thousands, many
 * at once) must be listed exactly once by `GET /runs`, as finished, soon after the last invoke.
 * Pages through the whole listing with the API's cursor, as a user would.
 */

export interface ListingCheck {
  /** runs the bench started with the listing on */
  expected: number;
  /** of those, listed as complete */
  listed: number;
  /** entries seen more than once in one walk through the pages (must be 0) */
  duplicates: number;
  /** ms from the end of the load until the listing showed every run complete (or the timeout) */
  catchUpMs: number;
  /** pages of 100 in the final walk */
  pages: number;
  complete: boolean;
}

async function walk(base: string, workflow: string): Promise<{ seen: Map<string, string[]>; pages: number }> {
  const seen = new Map<string, string[]>();
  let cursor: string | null = null;
  let pages = 0;
  do {
    const q = new URLSearchParams({ workflow, limit: "100" });
    if (cursor) q.set("cursor", cursor);
    const res = await fetch(`${base}/runs?${q}`);
    if (!res.ok) throw new Error(`GET /runs: HTTP ${res.status} ${await res.text()}`);
    const body = (await res.json()) as {
      runs: Array<{ run_id: string; status: string }>;
      next_cursor: string | null;
    };
    for (const r of body.runs) seen.set(r.run_id, [...(seen.get(r.run_id) ?? []), r.status]);
    cursor = body.next_cursor;
    pages += 1;
  } while (cursor);
  return { seen, pages };
}

export async function checkListing(
  base: string,
  workflow: string,
  ids: ReadonlySet<string>,
  timeoutMs: number,
): Promise<ListingCheck> {
  const expected = new Set(ids);
  const t0 = performance.now();
  for (;;) {
    const { seen, pages } = await walk(base, workflow);
    const listed = [...expected].filter((id) => seen.get(id)?.[0] === "complete").length;
    const duplicates = [...seen.values()].filter((s) => s.length > 1).length;
    const elapsed = performance.now() - t0;
    if ((listed === expected.size && duplicates === 0) || elapsed > timeoutMs) {
      return {
        expected: expected.size,
        listed,
        duplicates,
        catchUpMs: elapsed,
        pages,
        complete: listed === expected.size && duplicates === 0,
      };
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}
