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
import { call, type Envelope, run } from "../harness.ts";
import { listedStatus, staysListedThroughShardReset } from "../listing-shard.ts";

const stub = (id: string) => env.RUNS.get(env.RUNS.idFromString(id));

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
    expect(await listedStatus(e.run_id, "express-api")).toBe("complete");
  });

  it("keep a failed run as any run: its envelope reads back", async () => {
    const e: Envelope = await run("express-api", { fail: true });
    expect(e.status).toBe("failed");
    const res = await call(`/runs/${e.run_id}`);
    expect(res.status).toBe(200);
    expect(((await res.json()) as Envelope).status).toBe("failed");
    expect(await listedStatus(e.run_id, "express-api")).toBe("failed");
  });

  it("stay listed when their listing shard is reset before it has written the entry", async () => {
    await staysListedThroughShardReset("express-api", () => run("express-api", { n: 4 }));
  });
});
