/**
 * Per-key concurrency (docs/triggers.md): with `invoke.concurrency: {limit: 1, key: "{{ params.group }}"}`
 * never two runs of one group are active at once, each group's runs start in invoke order,
 * different groups run in parallel; a queued run's timeout counts from its start; a canceled
 * queued run never starts; a queued run's object may be evicted while it waits its turn.
 */

import { evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import workflowBundle from "workflow-bundle";
import type { Bundle } from "../../../src/bundle.ts";
import { flowPlan } from "../../../src/run/keys/flow-gates.ts";
import { flowKeyStub } from "../../../src/run/run-rpc.ts";
import { poll } from "../../support/poll.ts";
import { call, type Envelope, invoke, TARGET, waitForRun } from "../harness.ts";

async function start(group: string, holdMs = 100): Promise<string> {
  const res = await invoke("conc-keyed", { group, hold_ms: holdMs });
  expect(res.status).toBe(202);
  return ((await res.json()) as { run_id: string }).run_id;
}

async function maxInFlight(group: string): Promise<number> {
  const res = await fetch(`${TARGET}/stats?key=${encodeURIComponent(group)}`);
  return ((await res.json()) as { max_in_flight: number }).max_in_flight;
}

const status = async (runId: string) => ((await (await call(`/runs/${runId}`)).json()) as Envelope).status;

describe("invoke.concurrency", () => {
  it("runs 50 invokes of 5 groups one per group at a time, in invoke order, the groups in parallel", async () => {
    const prefix = `conc-${crypto.randomUUID()}`;
    const groups = [0, 1, 2, 3, 4].map((g) => `${prefix}-g${g}`);
    // Each group's invokes one after the other (their order is the invoke order); the groups at once.
    const ids = await Promise.all(
      groups.map(async (group) => {
        const mine: string[] = [];
        for (let i = 0; i < 10; i++) mine.push(await start(group));
        return mine;
      }),
    );
    const queued = await Promise.all(ids.map((mine) => status(mine[mine.length - 1] as string)));
    expect(queued).toContain("queued");
    const runs = await Promise.all(
      ids.map((mine) => Promise.all(mine.map((id) => waitForRun(id, {}, 60_000)))),
    );
    const spans: Array<{ group: number; from: number; to: number }> = [];
    for (const [g, group] of groups.entries()) {
      const mine = runs[g] as Envelope[];
      expect(mine.map((e) => e.status)).toEqual(Array(10).fill("complete"));
      expect(await maxInFlight(group)).toBe(1);
      const work = mine.map((e) => e.steps[0]);
      for (let i = 1; i < work.length; i++) {
        // The next run of the group starts after the one before it finished.
        expect(Date.parse(work[i].started_at)).toBeGreaterThanOrEqual(Date.parse(work[i - 1].finished_at));
      }
      for (const w of work)
        spans.push({ group: g, from: Date.parse(w.started_at), to: Date.parse(w.finished_at) });
    }
    // Different groups overlapped in time.
    const overlap = spans.some((a) =>
      spans.some((b) => a.group !== b.group && a.from < b.to && b.from < a.to),
    );
    expect(overlap).toBe(true);
  });

  it("counts a queued run's timeout from its start, not from its invoke", async () => {
    const group = `conc-timeout-${crypto.randomUUID()}`;
    const first = await start(group, 1800);
    const second = await start(group, 1800);
    expect(await status(second)).toBe("queued");
    const [a, b] = await Promise.all([waitForRun(first, {}, 20_000), waitForRun(second, {}, 20_000)]);
    expect(a.status).toBe("complete");
    // 3.6 s after its invoke, but within its 3 s from its start.
    expect(b.status).toBe("complete");
    expect(Date.parse(b.finished_at) - Date.parse(b.created_at)).toBeGreaterThan(3000);
  });

  it("never starts a queued run that is canceled, and its place goes to the next", async () => {
    const group = `conc-cancel-${crypto.randomUUID()}`;
    const first = await start(group, 600);
    const canceled = await start(group, 100);
    const third = await start(group, 100);
    const res = await call(`/runs/${canceled}/cancel`, { method: "POST" });
    expect(res.status).toBe(202);
    expect(((await res.json()) as Envelope).status).toBe("canceled");
    const [, c, t] = await Promise.all([waitForRun(first), waitForRun(canceled), waitForRun(third)]);
    expect(c.status).toBe("canceled");
    expect(c.steps[0].started_at).toBeNull();
    expect(t.status).toBe("complete");
  });

  it("starts a queued run whose object was evicted while it waited, once the slot is free", async () => {
    const group = `conc-evict-${crypto.randomUUID()}`;
    const first = await start(group, 2500);
    const second = await start(group, 100);
    // Evicted while it waits: the first still holds the key's one slot.
    expect(await status(second)).toBe("queued");
    await evictDurableObject(env.RUNS.get(env.RUNS.idFromString(second)));
    expect(await status(second)).toBe("queued");
    const e = await waitForRun(second, {}, 20_000);
    expect(e.status).toBe("complete");
    const a = await waitForRun(first);
    // It began once the first had ended (its deadline is counted from its begin; timeout_s 3).
    expect(Date.parse(e.deadline) - 3000).toBeGreaterThanOrEqual(Date.parse(a.steps[0].finished_at));
  });

  it("lists a queued run running, then with its final status, within 10 s of each (the status filter agrees)", async () => {
    const group = `conc-list-${crypto.randomUUID()}`;
    const first = await start(group, 2500);
    const second = await start(group, 2500);
    const listed = async (status: string) => {
      const page = (await (await call(`/runs?workflow=conc-keyed&status=${status}&limit=100`)).json()) as {
        runs: Array<{ run_id: string }>;
      };
      return page.runs.some((r) => r.run_id === second);
    };
    const within = (status: string, ms: number) =>
      poll(
        `run ${second} listed as ${status}`,
        () => listed(status),
        (yes) => yes,
        {
          timeoutMs: ms,
          intervalMs: 250,
        },
      );
    await within("queued", 10_000);
    await waitForRun(first, {}, 20_000);
    await within("running", 10_000);
    await waitForRun(second, {}, 20_000);
    await within("complete", 10_000);
    expect(await listed("queued")).toBe(false);
  }, 40_000);
});

describe("a slot whose run was never made", () => {
  it("is given back once a waiting run asks, and the waiting run starts (a Worker killed between the key's answer and the run)", async () => {
    const wf = Object.values((workflowBundle as Bundle).workflows).find((w) => w.name === "conc-keyed");
    if (!wf) throw new Error("conc-keyed is not in the bundle");
    const group = `lost-${crypto.randomUUID()}`;
    const params = { group, hold_ms: 10 };
    const gate = flowPlan(wf, { params, request: {} })?.gates[0];
    if (!gate) throw new Error("conc-keyed has no flow key");
    const key = flowKeyStub(env, null, gate.name);
    // The key gave a slot to a run the Worker was about to make, a minute ago; then it died.
    const ghost = env.RUNS.newUniqueId().toString();
    const admitted = await key.admit({
      gate: gate.name,
      runId: ghost,
      settings: gate.settings,
      priority: 0,
      params,
      cancelOn: [],
    });
    expect(admitted).toEqual({ outcome: "start", runId: ghost });
    await runInDurableObject(key as unknown as DurableObjectStub, (instance) => {
      const rules = (instance as unknown as { rules: { shared: { active: Array<[string, number]> } } }).rules;
      rules.shared.active = [[ghost, Date.now() - 120_000]];
    });
    // The next run waits for that slot.
    const waiting = await start(group);
    expect(await status(waiting)).toBe("queued");
    // Its heartbeat asks the key, which finds no run behind the slot and gives it to the waiting run.
    const run = env.RUNS.get(env.RUNS.idFromString(waiting));
    expect(await runDurableObjectAlarm(run)).toBe(true);
    const done = await waitForRun(waiting, {}, 10_000);
    expect(done.status).toBe("complete");
  });
});
