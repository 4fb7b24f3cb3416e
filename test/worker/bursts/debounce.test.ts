/**
 * invoke.debounce (docs/triggers.md, "Shaping bursts"): invokes of a key close together make one
 * run with the last invoke's params, every invoke answered with its id; a body that fails the
 * params schema is refused and changes nothing; a steady stream still starts a run by max_wait_s.
 */
import { describe, expect, it } from "vitest";
import { call, type Envelope, invoke, uniqueKey, waitForRun } from "../harness.ts";
import { arrivals } from "./bursts.ts";

async function send(body: unknown, wait?: number): Promise<{ status: number; body: Envelope }> {
  const res = await invoke("burst-debounce", body, wait === undefined ? {} : { wait });
  return { status: res.status, body: await res.json() };
}

describe("invoke.debounce", () => {
  it("makes one run of 20 invokes in quick succession, with the last one's params, each answered with its id", async () => {
    const group = uniqueKey("debounce");
    const answers = [];
    for (let n = 0; n < 20; n++) answers.push(await send({ group, n }));
    expect(answers.map((a) => a.status)).toEqual(Array(20).fill(202));
    expect(new Set(answers.map((a) => a.body.run_id)).size).toBe(1);
    expect(answers.map((a) => a.body.status)).toEqual(Array(20).fill("queued"));
    const run = await waitForRun(answers[0]?.body.run_id, {}, 10_000);
    expect(run.status).toBe("complete");
    expect(run.params).toEqual({ group, n: 19 });
    expect(run.coalesced).toBe(20);
    // One run, one delivery, with the last params.
    expect((await arrivals(group)).map((a) => a.body.n)).toEqual([19]);
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
    const t0 = Date.now();
    const ids: string[] = [];
    for (let n = 0; n < 14; n++) {
      ids.push((await send({ group, n })).body.run_id);
      await new Promise((r) => setTimeout(r, 250));
    }
    const distinct = [...new Set(ids)];
    expect(distinct.length).toBeGreaterThanOrEqual(2);
    const runs: Envelope[] = await Promise.all(distinct.map((id) => waitForRun(id, {}, 10_000)));
    expect(runs.map((r) => r.status)).toEqual(Array(distinct.length).fill("complete"));
    // Every invoke is counted in exactly one run.
    expect(runs.reduce((sum, r) => sum + r.coalesced, 0)).toBe(14);
    // The first group's run began by max_wait_s (2 s) after the first invoke (its step started then).
    expect(Date.parse(runs[0].steps[0].started_at) - t0).toBeLessThan(2000 + 500);
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
