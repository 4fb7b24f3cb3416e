/**
 * Audit of the run listing (SPEC section 4, `GET /runs`): paging must reach every run also when
 * a page ends early on the shard-read budget (two busy hours whose shards together exceed
 * MAX_SHARD_READS), and the query's own parameters are checked like the others.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { recordRun } from "../../src/run/listing.ts";
import { BUCKET_MS, MAX_SHARD_READS, SHARDS_PER_BUCKET, shardOf } from "../../src/run/listing-layout.ts";
import { call } from "./harness.ts";

interface Listed {
  run_id: string;
  status: string;
  created_at: string;
}
interface ListBody {
  runs: Listed[];
  next_cursor: string | null;
}

/** `perShard` run ids for every shard of an hour, so that the hour's whole shard set is in use. */
function idsCoveringEveryShard(perShard: number): string[] {
  const counts = new Array<number>(SHARDS_PER_BUCKET).fill(0);
  const ids: string[] = [];
  while (counts.some((n) => n < perShard)) {
    const id = env.RUNS.newUniqueId().toString();
    const s = shardOf(id);
    if ((counts[s] ?? 0) >= perShard) continue;
    counts[s] = (counts[s] ?? 0) + 1;
    ids.push(id);
  }
  return ids;
}

describe("GET /runs paging across busy hours", () => {
  it("lists every run once when two hours together use more shards than one page may read", async () => {
    expect(SHARDS_PER_BUCKET * 2).toBeGreaterThan(MAX_SHARD_READS);
    const hour = Math.floor(Date.now() / BUCKET_MS);
    const recorded: Array<{ id: string; status: string }> = [];
    // Two full hours before the current one, each run in its own millisecond.
    for (const [h, status] of [
      [hour - 1, "complete"],
      [hour - 2, "failed"],
    ] as const) {
      const ids = idsCoveringEveryShard(1);
      await Promise.all(
        ids.map((id, i) => {
          const created = h * BUCKET_MS + 1000 + i;
          recorded.push({ id, status });
          return recordRun(env, {
            run_id: id,
            workflow: "audit3-listing",
            status,
            created_at: new Date(created).toISOString(),
            finished_at: new Date(created + 10).toISOString(),
          });
        }),
      );
    }

    async function walk(query: string): Promise<string[]> {
      const seen: string[] = [];
      let cursor: string | null = null;
      for (let pages = 0; pages < 10; pages++) {
        const res = await call(
          `/runs?workflow=audit3-listing&${query}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`,
        );
        expect(res.status).toBe(200);
        const body = (await res.json()) as ListBody;
        seen.push(...body.runs.map((r) => r.run_id));
        cursor = body.next_cursor;
        if (cursor === null) return seen;
      }
      throw new Error(`paging did not end after 10 pages (${seen.length} runs seen)`);
    }

    const all = await walk("limit=100");
    expect(all).toHaveLength(recorded.length);
    expect(new Set(all)).toEqual(new Set(recorded.map((r) => r.id)));
    // Only the older hour's runs match: the newer hour yields nothing for the page to show.
    const failed = await walk("limit=100&status=failed");
    expect(new Set(failed)).toEqual(new Set(recorded.filter((r) => r.status === "failed").map((r) => r.id)));
  });
});

describe("GET /runs query checks", () => {
  it.each([
    "workflow=audit3-listing&workflow=listing-quick",
    "workflow=audit3-listing&workflow=",
    "workflow=&workflow=audit3-listing",
  ])("refuses a repeated workflow parameter (%s) with 400 invalid_query", async (q) => {
    const res = await call(`/runs?${q}`);
    expect(res.status).toBe(400);
    expect(res.headers.get("content-type")).toBe("application/problem+json");
    expect(((await res.json()) as { code: string }).code).toBe("invalid_query");
  });
});
