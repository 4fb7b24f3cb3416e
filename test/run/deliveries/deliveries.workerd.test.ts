/**
 * Deliveries through the API (docs/http-api.md, "Deliveries"): a failed delivery is listed with
 * its attempts (workflow-wide and on its run), one more attempt on request, a recover that
 * attempts each failed delivery exactly once however many calls ask at the same time, a kill
 * between attempts that loses nothing, and the problems a bad query or id gets.
 */

import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { poll } from "../../support/poll.ts";
import { call, type Envelope, run, targetLog } from "../../worker/harness.ts";

interface Delivery {
  id: string;
  run_id: string;
  workflow: string;
  type: string;
  url: string;
  state: string;
  attempts: Array<{ at: string; status: number | null; error: string | null }>;
  next_attempt_at: string | null;
  created_at: string;
}

async function json<T>(path: string, init?: RequestInit): Promise<{ status: number; body: T }> {
  const res = await call(path, init);
  return { status: res.status, body: (await res.json()) as T };
}

/** A finished run of deliver-down whose notification has failed (both attempts made). */
async function failedRun(): Promise<Envelope> {
  const e = await run("deliver-down", {});
  return poll(
    `run ${e.run_id}'s notification to fail`,
    async () => (await json<Envelope>(`/runs/${e.run_id}`)).body,
    (now) => now.deliveries[0]?.state === "failed",
    { timeoutMs: 15_000, intervalMs: 50 },
  );
}

/** Attempts the receiver got for `runId`. */
async function attempts(runId: string): Promise<number> {
  return (await targetLog("deliver-down")).filter((r) => r.body.includes(runId)).length;
}

/** The deliveries `/deliveries` lists for `query`, once it lists any and `done` holds. */
function listed(query: string, done: (d: Delivery[]) => boolean = (d) => d.length > 0): Promise<Delivery[]> {
  return poll(
    `/deliveries?${query}`,
    async () => {
      const page = await json<{ deliveries: Delivery[] }>(`/deliveries?workflow=deliver-down&${query}`);
      expect(page.status).toBe(200);
      return page.body.deliveries;
    },
    done,
    { timeoutMs: 15_000, intervalMs: 50 },
  );
}

/** Waits until the run's delivery record shows `n` attempts, failed, and nothing more due. */
function settled(runId: string, n: number): Promise<Delivery | undefined> {
  return poll(
    `${runId}'s delivery to settle after ${n} attempts`,
    async () => (await json<{ deliveries: Delivery[] }>(`/runs/${runId}/deliveries`)).body.deliveries[0],
    (d) => d?.attempts.length === n && d.state === "failed" && d.next_attempt_at === null,
    { timeoutMs: 15_000, intervalMs: 50 },
  );
}

describe("deliveries", () => {
  it("lists a failed notification with its attempts, workflow-wide and on its run; the envelope names it", async () => {
    const e = await failedRun();
    const id = `msg_${e.run_id}_run.complete`;
    expect(e.deliveries).toEqual([{ id, type: "run.complete", state: "failed" }]);
    const own = await json<{ deliveries: Delivery[] }>(`/runs/${e.run_id}/deliveries`);
    const [d] = own.body.deliveries;
    expect(d).toMatchObject({
      id,
      run_id: e.run_id,
      workflow: "deliver-down",
      state: "failed",
      next_attempt_at: null,
    });
    expect(d?.attempts.map((a) => [a.status, a.error])).toEqual([
      [500, "http_500"],
      [500, "http_500"],
    ]);
    expect(d?.url).toMatch(/\/status\/500\?key=deliver-down$/);
    // The listing has it once the run has reported its failed delivery (after its answer).
    const failed = await listed("state=failed&limit=100", (all) => all.some((x) => x.id === id));
    expect(failed.find((x) => x.id === id)).toEqual(d);
    const delivered = await json<{ deliveries: Delivery[] }>(
      "/deliveries?workflow=deliver-down&state=delivered",
    );
    expect(delivered.body.deliveries.find((x) => x.id === id)).toBeUndefined();
  });

  it("makes one more attempt on request, with the same webhook-id, whatever the state", async () => {
    const e = await failedRun();
    const id = `msg_${e.run_id}_run.complete`;
    const res = await json<{ id: string; state: string }>(`/deliveries/${id}/retry`, { method: "POST" });
    expect(res).toEqual({ status: 202, body: { id, state: "pending" } });
    // The delivery's own record: the third attempt made, and nothing more due.
    await settled(e.run_id, 3);
    expect(await attempts(e.run_id)).toBe(3);
    const log = (await targetLog("deliver-down")).filter((r) => r.body.includes(e.run_id));
    expect(new Set(log.map((r) => r.headers["webhook-id"]))).toEqual(new Set([id]));
  });

  it("recovers each failed delivery exactly once when four recovers ask at the same time", async () => {
    const since = new Date().toISOString();
    const runs = await Promise.all([failedRun(), failedRun(), failedRun()]);
    // The listing knows them as failed once each run has reported.
    await listed("state=failed&limit=100", (failed) =>
      runs.every((r) => failed.some((d) => d.run_id === r.run_id)),
    );
    const answers = await Promise.all(
      [1, 2, 3, 4].map(() =>
        json<{ recovered: number }>(`/deliveries/recover?workflow=deliver-down&since=${since}`, {
          method: "POST",
        }),
      ),
    );
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200]);
    expect(answers.reduce((n, a) => n + a.body.recovered, 0)).toBe(3);
    // Each delivery's record: one more attempt made, failed again, nothing more due.
    for (const r of runs) await settled(r.run_id, 3);
    expect(await Promise.all(runs.map((r) => attempts(r.run_id)))).toEqual([3, 3, 3]);
  });

  it("makes the next attempt after the run's object is killed between attempts", async () => {
    const e = await run("deliver-down", {});
    // The kill falls between the attempts: the first was made, the delivery still pending.
    const between = await poll(
      `the first attempt of ${e.run_id}'s notification`,
      async () => (await json<{ deliveries: Delivery[] }>(`/runs/${e.run_id}/deliveries`)).body.deliveries[0],
      (d) => (d?.attempts.length ?? 0) >= 1,
    );
    expect(between).toMatchObject({ state: "pending", attempts: [{ status: 500 }] });
    const stub = env.RUNS.get(env.RUNS.idFromString(e.run_id));
    const due = await runInDurableObject(stub, (_o, state) => state.storage.getAlarm());
    expect(due).not.toBeNull();
    const killedAt = Date.now();
    await runInDurableObject(stub, (_o, state) => state.abort("killed mid-delivery")).catch(() => {});
    // The next attempt is due when the object's own alarm says so; the alarm wakes the new
    // incarnation (here, or on its own once due: then there is nothing left to run).
    await poll(
      "the next attempt to be due",
      () => Date.now(),
      (now) => now >= (due as number),
    );
    await runDurableObjectAlarm(env.RUNS.get(env.RUNS.idFromString(e.run_id)));
    await settled(e.run_id, 2);
    const log = (await targetLog("deliver-down")).filter((r) => r.body.includes(e.run_id));
    expect(log).toHaveLength(2);
    expect(log[1]?.time).toBeGreaterThanOrEqual(killedAt);
    const own = await json<{ deliveries: Delivery[] }>(`/runs/${e.run_id}/deliveries`);
    expect(own.body.deliveries[0]?.state).toBe("failed");
  });

  it("answers a bad query 400 invalid_query and an unknown delivery 404 delivery_not_found", async () => {
    for (const q of [
      "/deliveries?workflow=deliver-down&state=lost",
      "/deliveries?workflow=deliver-down&cursor=nope",
      "/deliveries?workflow=deliver-down&limit=0",
    ]) {
      const res = await json<{ code: string }>(q);
      expect([q, res.status, res.body.code]).toEqual([q, 400, "invalid_query"]);
    }
    for (const since of ["", "&since=yesterday", "&since=2026-13-45T00:00:00Z"]) {
      const res = await json<{ code: string }>(`/deliveries/recover?workflow=deliver-down${since}`, {
        method: "POST",
      });
      expect([since, res.status, res.body.code]).toEqual([since, 400, "invalid_query"]);
    }
    for (const id of [`msg_${"0".repeat(64)}_run.failed`, "nope"]) {
      const res = await json<{ code: string }>(`/deliveries/${id}/retry`, { method: "POST" });
      expect([id, res.status, res.body.code]).toEqual([id, 404, "delivery_not_found"]);
    }
  });

  it("pages a workflow's deliveries with a cursor, each once", async () => {
    await Promise.all([failedRun(), failedRun()]);
    const seen: string[] = [];
    let cursor: string | null = null;
    for (let i = 0; i < 50; i++) {
      const q: string = `/deliveries?workflow=deliver-down&limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`;
      const page = await json<{ deliveries: Delivery[]; next_cursor: string | null }>(q);
      expect(page.status).toBe(200);
      seen.push(...page.body.deliveries.map((d) => d.id));
      cursor = page.body.next_cursor;
      if (!cursor) break;
    }
    expect(seen.length).toBeGreaterThanOrEqual(2);
    expect(new Set(seen).size).toBe(seen.length);
  });
});
