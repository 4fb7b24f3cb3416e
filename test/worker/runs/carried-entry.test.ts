/**
 * A default run that ends before its answer (docs/decisions.md, "A default run at the floor"):
 * its object writes its one row and arms nothing, the Worker that answered it carries its listing
 * entry (through a reset of its shard too), and a run that outlives its answer keeps the alarm
 * that guards its entry.
 */
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import workflowBundle from "workflow-bundle";
import type { Bundle } from "../../../src/bundle.ts";
import { sha256Hex } from "../../../src/common/sha256.ts";
import type { RunRpc } from "../../../src/run/run-rpc.ts";
import { poll } from "../../support/poll.ts";
import { call, type Envelope, invoke, run, uniqueKey } from "../harness.ts";
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

describe("a default run whose carrier died with its entry", () => {
  it("is listed by its client's retry of the invoke (found by npm run chaos)", async () => {
    const wf = Object.values((workflowBundle as Bundle).workflows).find((w) => w.name === "listing-quick");
    if (!wf) throw new Error("listing-quick is not in the bundle");
    const key = uniqueKey("carrier-died");
    const params = { n: 5 };
    const id = env.RUNS.idFromName(`${wf.name}\n${key}`);
    const runId = id.toString();
    // The Worker that asked for it died with its answer: the entry it would carry is gone.
    const first = await (env.RUNS.get(id) as unknown as RunRpc).start({
      runId,
      workflowKey: wf.key,
      params,
      request: {},
      bodyHash: await sha256Hex(JSON.stringify(params)),
      idempotencyKey: key,
      waitMs: 10_000,
      origin: null,
      rateLimit: null,
      definition: null,
      rerun: null,
      traceparent: null,
      carried: true,
    });
    expect(first).toMatchObject({ outcome: "started", runId, envelope: { status: "complete" } });
    expect((first as { listing?: unknown }).listing).toBeDefined();
    expect(await storedOf(runId)).toEqual({ rows: ["run"], alarm: null });
    // Its client never had the answer and sends the invoke again: that answer carries the entry.
    const again = await invoke("listing-quick", params, { wait: 10, headers: { "idempotency-key": key } });
    expect(again.status).toBe(200);
    expect(((await again.json()) as Envelope).run_id).toBe(runId);
    expect(await listedStatus(runId, "listing-quick")).toBe("complete");
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
