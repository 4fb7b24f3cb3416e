/**
 * Cron schedules (docs/triggers.md, "Schedules"), through the Worker's own `scheduled` handler as
 * a cron event reaches it: one run per entry whose cron fired, started once per scheduled time
 * however often its event arrives, with the entry's params and the Worker's public origin; and
 * entries in local time, in four zones, on the days their clocks change: each firing at its UTC
 * instant exactly once, whichever covering cron carried the event.
 */
import { runInDurableObject } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { call, type Envelope, invoke, waitForRun } from "../../worker/harness.ts";

/** The Worker's own entry, as a cron event reaches it (its `scheduled` handler). */
const scheduled = (cron: string, scheduledTime: number) =>
  (
    exports as unknown as {
      default: { scheduled(o: { cron: string; scheduledTime: number }): Promise<unknown> };
    }
  ).default.scheduled({ cron, scheduledTime });

describe("schedules", () => {
  async function scheduledRun(cron: string, time: number, n = 0): Promise<Envelope> {
    const key = `schedule:${cron}:UTC:${new Date(time).toISOString()}${n > 0 ? `:${n}` : ""}`;
    const id = env.RUNS.idFromName(`trig-schedule\n${key}`).toString();
    return waitForRun(id);
  }

  it("starts one run per entry whose cron fired, with the entry's params", async () => {
    const time = Date.UTC(2031, 0, 6, 6, 0, 0); // a Monday, 06:00 UTC
    await scheduled("0 6 * * MON-FRI", time);
    const us = await scheduledRun("0 6 * * MON-FRI", time);
    const ap = await scheduledRun("0 6 * * MON-FRI", time, 1);
    expect(us.params).toEqual({ region: "us" });
    expect(ap.params).toEqual({ region: "ap" });
    expect(us.status).toBe("complete");
    expect(us.request).toEqual({
      headers: {},
      schedule: { index: 1, cron: "0 6 * * MON-FRI", timezone: "UTC", manual: false },
    });
  });

  it("gives a scheduled run the origin of PUBLIC_URL, so its approvals' decide_url is absolute", async () => {
    const time = Date.UTC(2031, 0, 6, 6, 10, 0);
    await scheduled("*/5 * * * *", time);
    const run = await scheduledRun("*/5 * * * *", time);
    const stub = env.RUNS.get(env.RUNS.idFromString(run.run_id));
    const origin = await runInDurableObject(stub, (_obj, state) => {
      const stored = JSON.parse(state.storage.kv.get<string>("run") ?? "{}") as {
        doc: { origin?: string | null };
      };
      return stored.doc.origin;
    });
    // PUBLIC_URL is https://flows.example.com/some/path in the test Worker: only its origin counts.
    expect(origin).toBe("https://flows.example.com");
  });

  it("starts a scheduled time once, however often its event arrives", async () => {
    const time = Date.UTC(2031, 0, 6, 6, 5, 0);
    await scheduled("*/5 * * * *", time);
    const first = await scheduledRun("*/5 * * * *", time);
    await scheduled("*/5 * * * *", time);
    const again = await scheduledRun("*/5 * * * *", time);
    expect(again.run_id).toBe(first.run_id);
    expect(again.created_at).toBe(first.created_at);
    expect(first.params).toEqual({ region: "eu" });
  });

  it("starts nothing for a cron the workflow does not list", async () => {
    const time = Date.UTC(2031, 0, 6, 7, 7, 0);
    await scheduled("7 7 7 7 *", time);
    const key = `schedule:7 7 7 7 *:UTC:${new Date(time).toISOString()}`;
    const id = env.RUNS.idFromName(`trig-schedule\n${key}`).toString();
    expect((await call(`/runs/${id}`)).status).toBe(404);
  });
});

describe("schedules and declared request headers", () => {
  it("records the declared request headers of a cron run as missing (null), like an invoke without them", async () => {
    const time = Date.UTC(2032, 1, 2, 3, 5, 0);
    await scheduled("*/5 * * * *", time);
    const key = `schedule:*/5 * * * *:UTC:${new Date(time).toISOString()}`;
    const cron = await waitForRun(env.RUNS.idFromName(`schedule-headers\n${key}`).toString());
    const res = await invoke("schedule-headers", {}, { wait: 10 });
    const invoked = (await res.json()) as Envelope;
    // docs/triggers.md: `request` is `{"headers": {…}}` with every declared header, a missing one null.
    expect(invoked.request).toEqual({ headers: { x_source: null } });
    expect(cron.request.headers).toEqual(invoked.request.headers);
    expect(cron.request.schedule).toMatchObject({ index: 0, manual: false });
    expect(cron.steps[0].output).toEqual(invoked.steps[0].output);
    expect(cron.steps[0].output).toEqual({ result: { source: null, declared: ["x_source"] } });
  });
});

describe("schedules in local time", () => {
  /** The run of tz-schedule's entry (cron, zone) firing at `at`, if the handler started one. */
  async function firing(cron: string, zone: string, at: number): Promise<Envelope | null> {
    const key = `schedule:${cron}:${zone}:${new Date(at).toISOString()}`;
    const id = env.RUNS.idFromName(`tz-schedule\n${key}`).toString();
    if ((await call(`/runs/${id}`)).status === 404) return null;
    return waitForRun(id);
  }

  /**
   * Sends an event of `cron` at each of `times` and answers the instants among them at which the
   * entry (cron, zone) started a run with its own params.
   */
  async function fired(entry: [string, string, string], cron: string, times: number[]): Promise<string[]> {
    const [entryCron, zone, name] = entry;
    for (const t of times) await scheduled(cron, t);
    const started: string[] = [];
    for (const t of times) {
      const run = await firing(entryCron, zone, t);
      if (run) {
        expect(run.params).toEqual({ entry: name });
        expect(run.status).toBe("complete");
        started.push(new Date(t).toISOString());
      }
    }
    return started;
  }

  const BERLIN: [string, string, string] = ["30 2 * * *", "Europe/Berlin", "berlin"];
  const NY_SKIP: [string, string, string] = ["30 2 * * *", "America/New_York", "new-york-skip"];
  const NY_REPEAT: [string, string, string] = ["30 1 * * *", "America/New_York", "new-york-repeat"];
  const NY_CLOCK: [string, string, string] = ["*/30 * * * 0", "America/New_York", "new-york-clock"];
  const SYDNEY: [string, string, string] = ["30 2 * * *", "Australia/Sydney", "sydney"];
  const KOLKATA: [string, string, string] = ["0 9 * * *", "Asia/Kolkata", "kolkata"];

  it("Europe/Berlin: 02:30 fires at 01:30 UTC in winter and at 00:30 UTC in summer", async () => {
    expect(
      await fired(BERLIN, "30 0,1 * * *", [Date.UTC(2026, 0, 15, 0, 30), Date.UTC(2026, 0, 15, 1, 30)]),
    ).toEqual(["2026-01-15T01:30:00.000Z"]);
    expect(
      await fired(BERLIN, "30 0,1 * * *", [Date.UTC(2026, 6, 15, 0, 30), Date.UTC(2026, 6, 15, 1, 30)]),
    ).toEqual(["2026-07-15T00:30:00.000Z"]);
  });

  it("Europe/Berlin: 02:30, skipped on 2026-03-29, fires once, at 03:30 CEST (01:30 UTC)", async () => {
    const day = [Date.UTC(2026, 2, 29, 0, 30), Date.UTC(2026, 2, 29, 1, 30)];
    expect(await fired(BERLIN, "30 0,1 * * *", day)).toEqual(["2026-03-29T01:30:00.000Z"]);
  });

  it("Europe/Berlin: 02:30, repeated on 2026-10-25, fires once, at the first (00:30 UTC)", async () => {
    const day = [Date.UTC(2026, 9, 25, 0, 30), Date.UTC(2026, 9, 25, 1, 30)];
    expect(await fired(BERLIN, "30 0,1 * * *", day)).toEqual(["2026-10-25T00:30:00.000Z"]);
  });

  it("America/New_York: 02:30, skipped on 2026-03-08, fires once, at 03:30 EDT (07:30 UTC)", async () => {
    const day = [Date.UTC(2026, 2, 8, 6, 30), Date.UTC(2026, 2, 8, 7, 30)];
    expect(await fired(NY_SKIP, "30 6,7 * * *", day)).toEqual(["2026-03-08T07:30:00.000Z"]);
    // The day after, 02:30 EDT is 06:30 UTC.
    const next = [Date.UTC(2026, 2, 9, 6, 30), Date.UTC(2026, 2, 9, 7, 30)];
    expect(await fired(NY_SKIP, "30 6,7 * * *", next)).toEqual(["2026-03-09T06:30:00.000Z"]);
  });

  it("America/New_York: 01:30, repeated on 2026-11-01, fires once, at the first (05:30 UTC)", async () => {
    const day = [Date.UTC(2026, 10, 1, 5, 30), Date.UTC(2026, 10, 1, 6, 30)];
    expect(await fired(NY_REPEAT, "30 5,6 * * *", day)).toEqual(["2026-11-01T05:30:00.000Z"]);
  });

  it("America/New_York: an hour of `*` follows the clock: both passes of 01:00-01:59 on 2026-11-01, none of 02:00-02:59 on 2026-03-08", async () => {
    const fallBack = [0, 30, 60, 90, 120].map((m) => Date.UTC(2026, 10, 1, 5, m));
    // 01:00 EDT, 01:30 EDT, 01:00 EST, 01:30 EST, 02:00 EST.
    expect(await fired(NY_CLOCK, "0,30 * * * *", fallBack)).toEqual([
      "2026-11-01T05:00:00.000Z",
      "2026-11-01T05:30:00.000Z",
      "2026-11-01T06:00:00.000Z",
      "2026-11-01T06:30:00.000Z",
      "2026-11-01T07:00:00.000Z",
    ]);
    // 01:30 EST at 06:30 UTC; the clocks then read 03:00 EDT at 07:00 UTC: nothing in between.
    const springForward = [Date.UTC(2026, 2, 8, 6, 30), Date.UTC(2026, 2, 8, 7, 0)];
    expect(await fired(NY_CLOCK, "0,30 * * * *", springForward)).toEqual([
      "2026-03-08T06:30:00.000Z",
      "2026-03-08T07:00:00.000Z",
    ]);
  });

  it("Australia/Sydney: 02:30, repeated on 2026-04-05, fires once, at the first (15:30 UTC the day before)", async () => {
    const day = [Date.UTC(2026, 3, 4, 15, 30), Date.UTC(2026, 3, 4, 16, 30)];
    expect(await fired(SYDNEY, "30 15,16 * * *", day)).toEqual(["2026-04-04T15:30:00.000Z"]);
  });

  it("Australia/Sydney: 02:30, skipped on 2026-10-04, fires once, at 03:30 AEDT (16:30 UTC the day before)", async () => {
    const day = [Date.UTC(2026, 9, 3, 15, 30), Date.UTC(2026, 9, 3, 16, 30)];
    expect(await fired(SYDNEY, "30 15,16 * * *", day)).toEqual(["2026-10-03T16:30:00.000Z"]);
  });

  it("Asia/Kolkata: 09:00 fires at 03:30 UTC, half an hour off the UTC hours", async () => {
    const day = [Date.UTC(2026, 5, 1, 3, 0), Date.UTC(2026, 5, 1, 3, 30), Date.UTC(2026, 5, 1, 4, 0)];
    expect(await fired(KOLKATA, "30 3 * * *", day)).toEqual(["2026-06-01T03:30:00.000Z"]);
  });

  it("starts one run for a firing that two crons carry", async () => {
    const at = Date.UTC(2026, 7, 2, 3, 30);
    await scheduled("30 3 * * *", at);
    const first = await firing(...(KOLKATA.slice(0, 2) as [string, string]), at);
    // "*/5 * * * *" fires at 03:30 UTC too: the event reaches the same run.
    await scheduled("*/5 * * * *", at);
    const again = await firing(...(KOLKATA.slice(0, 2) as [string, string]), at);
    expect(first?.run_id).toBeDefined();
    expect(again?.run_id).toBe(first?.run_id);
    expect(again?.created_at).toBe(first?.created_at);
  });
});
