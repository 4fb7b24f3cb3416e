/**
 * What a listing shard holds of a run (src/run/listing/listing-shard.ts), read from the shard
 * object itself: the entry waiting in its buffer, or written in a batch row. Tests wait on this
 * record instead of sleeping through the shard's flush window.
 */
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { placeRun } from "../../src/run/listing/listing-layout.ts";

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
