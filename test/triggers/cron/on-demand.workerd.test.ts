/**
 * Schedules on demand (docs/triggers.md, "Schedules on demand"): an entry run now with its params,
 * paused and resumed (durable: the pause outlives the schedule object's restart, and the cron
 * handler, driven at chosen instants, starts nothing for a paused entry), and backfilled over a
 * range with each firing's idempotency key (once, however often or concurrently it is asked, and
 * not again for a firing that already ran). All with the workflow's credentials.
 */
import { runInDurableObject } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { call, TOKEN, waitForRun } from "../../worker/harness.ts";

const AUTH = { authorization: `Bearer ${TOKEN}` };
const scheduled = (cron: string, scheduledTime: number) =>
  (
    exports as unknown as {
      default: { scheduled(o: { cron: string; scheduledTime: number }): Promise<unknown> };
    }
  ).default.scheduled({ cron, scheduledTime });

const post = (path: string, headers: Record<string, string> = AUTH) =>
  call(path, { method: "POST", headers });

/** The run of entry `index`'s firing at `time` (its idempotency key names its object). */
const firingRun = (cron: string, time: number) =>
  env.RUNS.idFromName(`sched-ops\nschedule:${cron}:UTC:${new Date(time).toISOString()}`).toString();

async function stored(runId: string): Promise<boolean> {
  const stub = env.RUNS.get(env.RUNS.idFromString(runId));
  return runInDurableObject(stub, (_o, state) => state.storage.kv.get("run") !== undefined);
}

describe("run now", () => {
  it("starts the entry's run with its params and request.schedule {index, cron, timezone, manual: true}", async () => {
    const res = await post("/workflows/sched-ops/schedules/1/run");
    expect(res.status).toBe(202);
    const { run_id } = (await res.json()) as { run_id: string };
    expect(res.headers.get("location")).toBe(`/runs/${run_id}`);
    const run = await waitForRun(run_id, AUTH);
    expect(run.status).toBe("complete");
    expect(run.params).toEqual({ lane: "b" });
    expect(run.request.schedule).toEqual({ index: 1, cron: "0,30 * * * *", timezone: "UTC", manual: true });
  });

  it("needs the workflow's credentials, and names the entries a workflow has", async () => {
    expect((await post("/workflows/sched-ops/schedules/0/run", {})).status).toBe(401);
    const missing = await post("/workflows/sched-ops/schedules/2/run");
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as { code: string }).code).toBe("schedule_not_found");
    expect((await post("/workflows/sched-ops/schedules/x/pause")).status).toBe(404);
  });
});

describe("pause and resume", () => {
  it("starts nothing for a paused entry, also after its object restarts, and starts again once resumed", async () => {
    const paused = await post("/workflows/sched-ops/schedules/0/pause");
    expect(await paused.json()).toEqual({ index: 0, cron: "*/5 * * * *", timezone: "UTC", paused: true });
    const listed = (await (await call("/workflows/sched-ops/schedules")).json()) as {
      schedules: Array<{ index: number; paused: boolean }>;
    };
    expect(listed.schedules.map((s) => [s.index, s.paused])).toEqual([
      [0, true],
      [1, false],
    ]);
    // A restart between the pause and the next firing: the object is killed, the pause is kept.
    const ns = (env as unknown as { SCHEDULES: DurableObjectNamespace }).SCHEDULES;
    await runInDurableObject(ns.get(ns.idFromName("sched-ops")), (_o, state) => state.abort("killed")).catch(
      () => {},
    );

    const t1 = Date.UTC(2032, 2, 3, 10, 30, 0); // both entries due
    await scheduled("*/5 * * * *", t1);
    await scheduled("0,30 * * * *", t1);
    expect((await waitForRun(firingRun("0,30 * * * *", t1), AUTH)).status).toBe("complete");
    expect(await stored(firingRun("*/5 * * * *", t1))).toBe(false);

    const resumed = await post("/workflows/sched-ops/schedules/0/resume");
    expect(((await resumed.json()) as { paused: boolean }).paused).toBe(false);
    const t2 = Date.UTC(2032, 2, 3, 10, 35, 0);
    await scheduled("*/5 * * * *", t2);
    expect((await waitForRun(firingRun("*/5 * * * *", t2), AUTH)).params).toEqual({ lane: "a" });
    // The firing missed while paused is not made up.
    expect(await stored(firingRun("*/5 * * * *", t1))).toBe(false);
  });
});

describe("backfill", () => {
  it("starts one run per firing in [from, to), each once however often or concurrently it is asked", async () => {
    const from = "2032-05-01T08:00:00Z";
    const to = "2032-05-01T08:15:00Z";
    const path = `/workflows/sched-ops/schedules/0/backfill?from=${from}&to=${to}`;
    const [a, b] = await Promise.all([post(path), post(path)]);
    const first = (await a.json()) as { runs: Array<{ at: string; run_id: string; started: boolean }> };
    const second = (await b.json()) as typeof first;
    expect(first.runs.map((r) => r.at)).toEqual([
      "2032-05-01T08:00:00.000Z",
      "2032-05-01T08:05:00.000Z",
      "2032-05-01T08:10:00.000Z",
    ]);
    expect(second.runs.map((r) => r.run_id)).toEqual(first.runs.map((r) => r.run_id));
    // Between the two concurrent calls, each firing was started by exactly one.
    expect(first.runs.map((r, i) => r.started !== second.runs[i]?.started)).toEqual([true, true, true]);
    const again = (await (await post(path)).json()) as typeof first;
    expect(again.runs.map((r) => r.started)).toEqual([false, false, false]);
    const run = await waitForRun(first.runs[1]?.run_id as string, AUTH);
    expect(run.request.schedule).toEqual({ index: 0, cron: "*/5 * * * *", timezone: "UTC", manual: true });
  });

  it("starts no second run for a firing the cron handler already ran", async () => {
    const t = Date.UTC(2032, 6, 1, 9, 0, 0);
    await scheduled("0,30 * * * *", t);
    const ran = firingRun("0,30 * * * *", t);
    await waitForRun(ran, AUTH);
    const res = await post(
      `/workflows/sched-ops/schedules/1/backfill?from=2032-07-01T09:00:00Z&to=2032-07-01T10:00:01Z`,
    );
    const body = (await res.json()) as { runs: Array<{ at: string; run_id: string; started: boolean }> };
    expect(body.runs).toEqual([
      { at: "2032-07-01T09:00:00.000Z", run_id: ran, started: false },
      { at: "2032-07-01T09:30:00.000Z", run_id: expect.any(String), started: true },
      { at: "2032-07-01T10:00:00.000Z", run_id: expect.any(String), started: true },
    ]);
  });

  it("refuses more than 100 firings, and a range without from and to", async () => {
    const many = await post(
      "/workflows/sched-ops/schedules/0/backfill?from=2032-01-01T00:00:00Z&to=2032-01-02T00:00:00Z",
    );
    expect(many.status).toBe(400);
    expect(((await many.json()) as { code: string }).code).toBe("too_many_firings");
    const none = await post("/workflows/sched-ops/schedules/0/backfill?from=2032-01-01T00:00:00Z");
    expect(((await none.json()) as { code: string }).code).toBe("invalid_query");
  });
});
