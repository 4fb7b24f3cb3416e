/**
 * What a listing shard holds of a run (src/run/listing/listing-shard.ts), read from the shard
 * object itself: the entry waiting in its buffer, or written in a batch row. Tests wait on this
 * record instead of sleeping through the shard's flush window.
 */
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { expect } from "vitest";
import { placeRun, SHARDS_PER_BUCKET } from "../../src/run/listing/listing-layout.ts";
import { poll } from "../support/poll.ts";
import { call, type Envelope } from "./harness.ts";

/** The listing shard a run of `workflow` started now goes to. */
export function shardStubOf(runId: string, workflow: string): DurableObjectStub {
  const ref = placeRun(workflow, runId, Date.now());
  return env.RUN_INDEX.get(env.RUN_INDEX.idFromName(`${workflow}\n${ref.bucket}\n${ref.shard}`));
}

/** Where the shard holds the run's entry: waiting in its buffer, or in a written batch row. */
export function shardHolds(
  runId: string,
  workflow: string,
): Promise<{ buffered: boolean; written: boolean }> {
  return runInDurableObject(shardStubOf(runId, workflow), (instance, state) => {
    const shard = (instance as unknown as { shard: { buffer: Map<string, { run_id: string }> } }).shard;
    const buffered = [...shard.buffer.values()].some((r) => r.run_id === runId);
    const tables = state.storage.sql
      .exec<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'batches'")
      .toArray();
    const written =
      tables.length > 0 &&
      state.storage.sql
        .exec<{ entries: string }>("SELECT entries FROM batches")
        .toArray()
        .some((row) => (JSON.parse(row.entries) as Array<[string]>).some((p) => p[0] === runId));
    return { buffered, written };
  });
}

/** The run's status in the listing, once it is listed (the listing lags up to ~10 s). */
export async function listedStatus(runId: string, workflow: string): Promise<string> {
  const found = await poll(
    `run ${runId} in the listing`,
    async () =>
      (
        (await (await call(`/runs?workflow=${workflow}&limit=100`)).json()) as {
          runs: Array<{ run_id: string; status: string }>;
        }
      ).runs.find((r) => r.run_id === runId),
    (r) => r !== undefined,
    { timeoutMs: 12_000, intervalMs: 100 },
  );
  return (found as { status: string }).status;
}

/**
 * A run whose entry its Worker carries (started by `start`, a run of `workflow` that ends before
 * its answer): its shard is reset while it holds the entry unwritten, and the entry is listed all
 * the same, written by the next incarnation; another reset then loses nothing.
 */
export async function staysListedThroughShardReset(
  workflow: string,
  start: () => Promise<Envelope>,
): Promise<void> {
  // Every shard of this hour holds what it takes unwritten for 2 s (not 300 ms): long enough to
  // be reset with the entry on a loaded machine.
  const bucket = placeRun(workflow, "x", Date.now()).bucket;
  for (let s = 0; s < SHARDS_PER_BUCKET; s++) {
    const stub = env.RUN_INDEX.get(env.RUN_INDEX.idFromName(`${workflow}\n${bucket}\n${s}`));
    await runInDurableObject(stub, (instance) => {
      const shard = (instance as unknown as { shard: { env: Env } }).shard;
      shard.env = { ...shard.env, LISTING_FLUSH_MS: "2000" } as Env;
    });
  }
  const e = await start();
  const ref = placeRun(workflow, e.run_id, Date.parse(e.created_at));
  expect(ref.bucket).toBe(bucket);
  const shard = env.RUN_INDEX.get(env.RUN_INDEX.idFromName(`${workflow}\n${ref.bucket}\n${ref.shard}`));
  // The entry reached the shard (listed from its memory), unwritten; the shard is reset,
  // losing what it has not written.
  await poll(
    `the shard to take ${e.run_id}'s entry`,
    () => shardHolds(e.run_id, workflow),
    (h) => h.buffered,
  );
  expect(await shardHolds(e.run_id, workflow)).toEqual({ buffered: true, written: false });
  await runInDurableObject(shard, (_o, state) => state.abort("shard reset before its flush")).catch(() => {});
  // The Worker that answered the run is told the shard went, and sends the entry to the next
  // incarnation, which writes it.
  await poll(
    `${e.run_id}'s entry written again`,
    () => shardHolds(e.run_id, workflow),
    (h) => h.written,
  );
  expect(await listedStatus(e.run_id, workflow)).toBe(e.status);
  // That one wrote it: another reset loses nothing.
  await runInDurableObject(shard, (_o, state) => state.abort("shard reset after its flush")).catch(() => {});
  expect(await listedStatus(e.run_id, workflow)).toBe(e.status);
}
