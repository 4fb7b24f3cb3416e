/**
 * invoke.debounce (docs/triggers.md, "Shaping bursts"): invokes of a key close together make one
 * run with the last invoke's params, every invoke answered with its id; a body that fails the
 * params schema is refused and changes nothing; a steady stream still starts a run by max_wait_s.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import workflowBundle from "workflow-bundle";
import type { Bundle } from "../../../src/bundle.ts";
import { placed, residencyOf, runIdOf } from "../../../src/run/jurisdiction.ts";
import { flowPlan } from "../../../src/run/keys/flow-gates.ts";
import { flowKeyStub } from "../../../src/run/run-rpc.ts";
import { call, type Envelope, invoke, uniqueKey, waitForRun } from "../harness.ts";
import { arrivals } from "./bursts.ts";

async function send(body: unknown, wait?: number): Promise<{ status: number; body: Envelope }> {
  const res = await invoke("burst-debounce", body, wait === undefined ? {} : { wait });
  return { status: res.status, body: await res.json() };
}

describe("invoke.debounce", () => {
  it("coalesces invokes closer than period_s into one run with the last one's params, each answered with its id", async () => {
    const group = uniqueKey("debounce");
    const answers: Array<{ status: number; body: Envelope; sent: number; answered: number }> = [];
    for (let n = 0; n < 20; n++) {
      const sent = Date.now();
      const a = await send({ group, n });
      answers.push({ ...a, sent, answered: Date.now() });
    }
    expect(answers.map((a) => a.status)).toEqual(Array(20).fill(202));
    expect(answers.map((a) => a.body.status)).toEqual(Array(20).fill("queued"));
    // The key took each invoke between its sending and its answer: one taken less than period_s
    // (0.4 s) after the one before, and within max_wait_s (2 s) of the first, joined its group.
    for (let i = 1; i < answers.length; i++) {
      const [prev, cur] = [answers[i - 1], answers[i]] as [(typeof answers)[0], (typeof answers)[0]];
      if (cur.answered < prev.sent + 400 && cur.answered < (answers[0] as (typeof answers)[0]).sent + 2000) {
        expect(cur.body.run_id, `invoke ${i}`).toBe(prev.body.run_id);
      }
    }
    const ids = [...new Set(answers.map((a) => a.body.run_id as string))];
    const runs: Envelope[] = await Promise.all(ids.map((id) => waitForRun(id, {}, 10_000)));
    // Every invoke counted once; each run has the params of the last invoke answered with its id,
    // and made one delivery with them.
    expect(runs.map((r) => r.status)).toEqual(ids.map(() => "complete"));
    expect(runs.reduce((sum, r) => sum + r.coalesced, 0)).toBe(20);
    for (const r of runs) {
      const mine = answers.map((a, n) => ({ id: a.body.run_id, n })).filter((a) => a.id === r.run_id);
      expect(r.params).toEqual({ group, n: Math.max(...mine.map((a) => a.n)) });
      expect(r.coalesced).toBe(mine.length);
    }
    expect((await arrivals(group)).map((a) => a.body.n as number).sort((x, y) => x - y)).toEqual(
      runs.map((r) => r.params.n).sort((x: number, y: number) => x - y),
    );
  });

  it("shows a queued run's group as it stands: the last params, how many invokes, when it is due", async () => {
    const group = uniqueKey("debounce-view");
    const answers = [];
    for (let n = 0; n < 3; n++) answers.push(await send({ group, n }));
    const id = answers[0]?.body.run_id as string;
    const res = await call(`/runs/${id}`);
    const queued = (await res.json()) as Envelope;
    expect(queued.status).toBe("queued");
    expect(queued.params).toEqual({ group, n: 2 });
    expect(queued.coalesced).toBe(3);
    expect(queued.queue.reason).toBe("debounce");
    // Due a debounce period after the last invoke, not the first.
    expect(Date.parse(queued.queue.starts_at)).toBeGreaterThan(Date.parse(queued.created_at));
    const run = await waitForRun(id, {}, 10_000);
    expect(run.params).toEqual({ group, n: 2 });
  });

  it("answers 422 to an invoke whose body fails the params schema and leaves the group as it was", async () => {
    const group = uniqueKey("debounce-bad");
    const first = await send({ group, n: 1 });
    const second = await send({ group, n: 2 });
    const bad = await send({ group, n: "three" });
    expect(bad.status).toBe(422);
    const run = await waitForRun(first.body.run_id, {}, 10_000);
    expect(second.body.run_id).toBe(first.body.run_id);
    expect(run.params).toEqual({ group, n: 2 });
    expect(run.coalesced).toBe(2);
  });

  it("starts a run no later than max_wait_s after the first invoke of a steady stream, and the next invoke opens a new group", async () => {
    const group = uniqueKey("debounce-stream");
    const firstAnswered: number[] = [];
    const ids: string[] = [];
    /** When the key said the first group's run is due, each time it was asked while the run queued. */
    const dueTimes: number[] = [];
    for (let n = 0; n < 14; n++) {
      ids.push((await send({ group, n })).body.run_id);
      if (n === 0) firstAnswered.push(Date.now());
      const first = (await (await call(`/runs/${ids[0]}`)).json()) as Envelope;
      if (first.status === "queued") dueTimes.push(Date.parse(first.queue.starts_at));
      // Invokes 0.25 s apart: each inside the 0.4 s period, so only max_wait_s ends a group.
      await new Promise((r) => setTimeout(r, 250));
    }
    const distinct = [...new Set(ids)];
    expect(distinct.length).toBeGreaterThanOrEqual(2);
    const runs: Envelope[] = await Promise.all(distinct.map((id) => waitForRun(id, {}, 10_000)));
    expect(runs.map((r) => r.status)).toEqual(Array(distinct.length).fill("complete"));
    // Every invoke is counted in exactly one run.
    expect(runs.reduce((sum, r) => sum + r.coalesced, 0)).toBe(14);
    // The key never let the first group's run wait past max_wait_s (2 s) after its first invoke,
    // and the run did not begin before it was due (its deadline is counted from its begin).
    expect(dueTimes.length).toBeGreaterThan(0);
    for (const due of dueTimes) expect(due).toBeLessThanOrEqual((firstAnswered[0] as number) + 2000);
    const begun = Date.parse(runs[0].deadline) - 10_000;
    expect(begun).toBeGreaterThanOrEqual(Math.max(...dueTimes));
  });

  it("answers every waiting invoke of a group with the run's final envelope", async () => {
    const group = uniqueKey("debounce-wait");
    const [a, b] = await Promise.all([send({ group, n: 1 }, 10), send({ group, n: 2 }, 10)]);
    expect([a.status, b.status]).toEqual([200, 200]);
    expect(a.body.run_id).toBe(b.body.run_id);
    expect(a.body.status).toBe("complete");
    expect(a.body.coalesced).toBe(2);
  });
});

describe("a group's first invoke cut short", () => {
  it("makes its run when it is sent again after a kill between its key's answer and its run's creation (found by npm run chaos)", async () => {
    const wf = Object.values((workflowBundle as Bundle).workflows).find((w) => w.name === "burst-debounce");
    if (!wf) throw new Error("burst-debounce is not in the bundle");
    const params = { group: uniqueKey("debounce-cut"), n: 1 };
    const idempotencyKey = uniqueKey("cut");
    // What the Worker did before it died: the run's id from the idempotency key, the key's admission.
    const residency = residencyOf(wf);
    const { hex } = placed(env.RUNS, residency, (ns) => {
      const id = ns.idFromName(`${wf.name}\n${idempotencyKey}`);
      return { stub: null, hex: id.toString() };
    });
    const runId = runIdOf(hex, residency);
    const gate = flowPlan(wf, { params, request: {} })?.gates[0];
    if (!gate) throw new Error("burst-debounce has no flow key");
    const verdict = await flowKeyStub(env, residency, gate.name).admit({
      gate: gate.name,
      runId,
      settings: gate.settings,
      priority: 0,
      params,
      cancelOn: gate.cancelOn,
    });
    expect(verdict).toMatchObject({ outcome: "queued", runId });
    expect((await call(`/runs/${runId}`)).status).toBe(404);
    // The client sends its invoke again: its run is made, in its group, and runs.
    const res = await invoke("burst-debounce", params, { headers: { "idempotency-key": idempotencyKey } });
    expect(res.status).toBe(202);
    expect(((await res.json()) as Envelope).run_id).toBe(runId);
    const done = await waitForRun(runId, {}, 10_000);
    expect(done.status).toBe("complete");
    expect(done.coalesced).toBe(1);
  });
});
