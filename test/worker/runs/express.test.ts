/**
 * Express runs (docs/operations.md, "Express runs"): with `history: failures`, a run that
 * completes before its answer writes nothing to its own object, not even an alarm, is still
 * listed, and reading it is 410 run_not_kept; a failed run is kept as always. Its listing entry,
 * carried by the Worker that answered it, survives a reset of its listing shard before the shard
 * has written it.
 */

import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { placeRun, SHARDS_PER_BUCKET } from "../../../src/run/listing/listing-layout.ts";
import { poll } from "../../support/poll.ts";
import { call, type Envelope, run } from "../harness.ts";
import { shardHolds } from "../listing-shard.ts";

const stub = (id: string) => env.RUNS.get(env.RUNS.idFromString(id));

/** The run's status in the listing, once it is listed (the listing lags up to ~10 s). */
async function listedStatus(runId: string): Promise<string> {
  const found = await poll(
    `run ${runId} in the listing`,
    async () =>
      (
        (await (await call("/runs?workflow=express-api&limit=100")).json()) as {
          runs: Array<{ run_id: string; status: string }>;
        }
      ).runs.find((r) => r.run_id === runId),
    (r) => r !== undefined,
    { timeoutMs: 12_000, intervalMs: 100 },
  );
  return (found as { status: string }).status;
}

describe("express runs", () => {
  it("answer a completed run's envelope, write nothing to its object, and answer a later read 410 run_not_kept", async () => {
    const e: Envelope = await run("express-api", { n: 2 });
    expect(e.status).toBe("complete");
    const stored = await runInDurableObject(stub(e.run_id), async (_o, state) => ({
      rows: [...state.storage.kv.list()].length,
      alarm: await state.storage.getAlarm(),
    }));
    expect(stored).toEqual({ rows: 0, alarm: null });
    const res = await call(`/runs/${e.run_id}`);
    expect(res.status).toBe(410);
    expect(((await res.json()) as { code: string }).code).toBe("run_not_kept");
  });

  it("are still listed, with their status", async () => {
    const e: Envelope = await run("express-api", { n: 3 });
    expect(await listedStatus(e.run_id)).toBe("complete");
  });

  it("keep a failed run as any run: its envelope reads back", async () => {
    const e: Envelope = await run("express-api", { fail: true });
    expect(e.status).toBe("failed");
    const res = await call(`/runs/${e.run_id}`);
    expect(res.status).toBe(200);
    expect(((await res.json()) as Envelope).status).toBe("failed");
    expect(await listedStatus(e.run_id)).toBe("failed");
  });

  it("stay listed when their listing shard is reset before it has written the entry", async () => {
    // Every shard of this hour holds what it takes unwritten for 2 s (not 300 ms): long enough to
    // be reset with the entry on a loaded machine.
    const bucket = placeRun("express-api", "x", Date.now()).bucket;
    for (let s = 0; s < SHARDS_PER_BUCKET; s++) {
      const stub = env.RUN_INDEX.get(env.RUN_INDEX.idFromName(`express-api\n${bucket}\n${s}`));
      await runInDurableObject(stub, (instance) => {
        const shard = (instance as unknown as { shard: { env: Env } }).shard;
        shard.env = { ...shard.env, LISTING_FLUSH_MS: "2000" } as Env;
      });
    }
    const e: Envelope = await run("express-api", { n: 4 });
    const ref = placeRun("express-api", e.run_id, Date.parse(e.created_at));
    expect(ref.bucket).toBe(bucket);
    const shard = env.RUN_INDEX.get(env.RUN_INDEX.idFromName(`express-api\n${ref.bucket}\n${ref.shard}`));
    // The entry reached the shard (listed from its memory), unwritten; the shard is reset,
    // losing what it has not written.
    await poll(
      `the shard to take ${e.run_id}'s entry`,
      () => shardHolds(e.run_id, "express-api"),
      (h) => h.buffered,
    );
    expect(await shardHolds(e.run_id, "express-api")).toEqual({ buffered: true, written: false });
    await runInDurableObject(shard, (_o, state) => state.abort("shard reset before its flush")).catch(
      () => {},
    );
    // The Worker that answered the run is told the shard went, and sends the entry to the next
    // incarnation, which writes it.
    await poll(
      `${e.run_id}'s entry written again`,
      () => shardHolds(e.run_id, "express-api"),
      (h) => h.written,
    );
    expect(await listedStatus(e.run_id)).toBe("complete");
    // That one wrote it: another reset loses nothing.
    await runInDurableObject(shard, (_o, state) => state.abort("shard reset after its flush")).catch(
      () => {},
    );
    expect(await listedStatus(e.run_id)).toBe("complete");
  });
});
