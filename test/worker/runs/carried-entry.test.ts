/**
 * A default run that ends before its answer (docs/decisions.md, "A default run at the floor"):
 * its object writes its one row and arms nothing, the Worker that answered it carries its listing
 * entry (through a reset of its shard too), and a run that outlives its answer keeps the alarm
 * that guards its entry.
 */
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { poll } from "../../support/poll.ts";
import { call, type Envelope, invoke, run } from "../harness.ts";
import { listedStatus, staysListedThroughShardReset } from "../listing-shard.ts";

const stub = (id: string) => env.RUNS.get(env.RUNS.idFromString(id));

function storedOf(runId: string) {
  return runInDurableObject(stub(runId), async (_o, state) => ({
    rows: [...state.storage.kv.list()].map(([key]) => key),
    alarm: await state.storage.getAlarm(),
  }));
}

describe("a default run that ends before its answer", () => {
  it("writes its one row, arms no alarm, reads back, and is listed with its status", async () => {
    const e: Envelope = await run("listing-quick", { n: 2 });
    expect(e.status).toBe("complete");
    expect(await storedOf(e.run_id)).toEqual({ rows: ["run"], alarm: null });
    expect(((await (await call(`/runs/${e.run_id}`)).json()) as Envelope).status).toBe("complete");
    expect(await listedStatus(e.run_id, "listing-quick")).toBe("complete");
  });

  it("fails the same way: one row, no alarm, listed failed", async () => {
    const e: Envelope = await run("listing-quick", { n: "not a number" });
    expect(e.status).toBe("failed");
    expect(await storedOf(e.run_id)).toEqual({ rows: ["run"], alarm: null });
    expect(await listedStatus(e.run_id, "listing-quick")).toBe("failed");
  });

  it("stays listed when its listing shard is reset before it has written the entry", async () => {
    await staysListedThroughShardReset("listing-quick", () => run("listing-quick", { n: 3 }));
  });
});

describe("a default run that outlives its answer", () => {
  it("keeps the alarm that guards its listing entry", async () => {
    const res = await invoke("listing-quick", { n: 4 });
    expect(res.status).toBe(202);
    const { run_id } = (await res.json()) as { run_id: string };
    const stored = await poll(
      `run ${run_id} to finish`,
      () =>
        runInDurableObject(stub(run_id), (o) => (o as unknown as { run: { active: boolean } }).run.active),
      (active) => !active,
    );
    expect(stored).toBe(false);
    expect((await storedOf(run_id)).alarm).not.toBeNull();
    expect(await listedStatus(run_id, "listing-quick")).toBe("complete");
  });
});
