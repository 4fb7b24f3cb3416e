/**
 * the run listing (docs/http-api.md, `GET /runs`): paging must reach every run also when
 * a page ends early on the shard-read budget (two busy hours whose shards together exceed
 * MAX_SHARD_READS), and the query's own parameters are checked like the others.
 */

import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { recordRun } from "../../../src/run/listing/listing.ts";
import {
  BUCKET_MS,
  MAX_SHARD_READS,
  SHARDS_PER_BUCKET,
  shardOf,
} from "../../../src/run/listing/listing-layout.ts";
import { poll } from "../../support/poll.ts";
import { call, run } from "../../worker/harness.ts";
import { shardHolds } from "../../worker/listing-shard.ts";

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
            workflow: "listing-paging",
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
          `/runs?workflow=listing-paging&${query}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`,
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
    "workflow=listing-paging&workflow=listing-quick",
    "workflow=listing-paging&workflow=",
    "workflow=&workflow=listing-paging",
  ])("refuses a repeated workflow parameter (%s) with 400 invalid_query", async (q) => {
    const res = await call(`/runs?${q}`);
    expect(res.status).toBe(400);
    expect(res.headers.get("content-type")).toBe("application/problem+json");
    expect(((await res.json()) as { code: string }).code).toBe("invalid_query");
  });
});

describe("a run deleted, then created again under the same Idempotency-Key", () => {
  async function listed(runId: string): Promise<Listed[]> {
    const res = await call("/runs?workflow=listing-paging&limit=100");
    const body = (await res.json()) as ListBody;
    return body.runs.filter((r) => r.run_id === runId);
  }

  async function listedWithin10s(second: { run_id: string; created_at: string }): Promise<void> {
    const entries = await poll(
      `run ${second.run_id} listed`,
      () => listed(second.run_id),
      (e) => e.length > 0,
      {
        timeoutMs: 12_000,
        intervalMs: 100,
      },
    );
    expect(entries).toHaveLength(1);
    expect(entries[0]?.created_at).toBe(second.created_at);
    expect(entries[0]?.status).toBe("complete");
  }

  it("is listed when the first run was deleted while its own listing write was still on its way", async () => {
    const key = `paging-${crypto.randomUUID()}`;
    const first = await run("listing-paging", { n: 1 }, { headers: { "idempotency-key": key } });
    // The first run has sent its entry, which waits in its shard's batch (FLUSH_WINDOW_MS) while
    // the run is deleted and created anew.
    await poll(
      `the shard to take ${first.run_id}'s entry`,
      () => shardHolds(first.run_id, "listing-paging"),
      (h) => h.buffered || h.written,
    );
    expect((await call(`/runs/${first.run_id}`, { method: "DELETE" })).status).toBe(204);
    const second = await run("listing-paging", { n: 2 }, { headers: { "idempotency-key": key } });
    expect(second.run_id).toBe(first.run_id);
    await listedWithin10s(second);
    // The deleted first run never comes back.
    expect((await listed(first.run_id)).filter((r) => r.created_at === first.created_at)).toEqual([]);
  }, 30_000);

  it("is listed again (the new run, once)", async () => {
    const key = `paging-${crypto.randomUUID()}`;
    const first = await run("listing-paging", { n: 1 }, { headers: { "idempotency-key": key } });
    await poll(
      `${first.run_id} listed`,
      () => listed(first.run_id),
      (l) => l.length > 0,
      {
        timeoutMs: 12_000,
        intervalMs: 100,
      },
    );
    expect((await call(`/runs/${first.run_id}`, { method: "DELETE" })).status).toBe(204);
    expect(await listed(first.run_id)).toEqual([]);
    // The key is free again: a new run, with the same (derived) run id.
    const second = await run("listing-paging", { n: 2 }, { headers: { "idempotency-key": key } });
    expect(second.run_id).toBe(first.run_id);
    expect(second.created_at).not.toBe(first.created_at);
    await listedWithin10s(second);
  }, 30_000);
});
