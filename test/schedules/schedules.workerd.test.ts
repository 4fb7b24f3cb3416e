/**
 * Cron schedules (docs/triggers.md, "Schedules"), through the Worker's own `scheduled` handler as
 * a cron event reaches it: one run per entry whose cron fired, started once per scheduled time
 * however often its event arrives, with the entry's params and the Worker's public origin.
 */
import { runInDurableObject } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { call, type Envelope, invoke, waitForRun } from "../worker/harness.ts";

/** The Worker's own entry, as a cron event reaches it (its `scheduled` handler). */
const scheduled = (cron: string, scheduledTime: number) =>
  (
    exports as unknown as {
      default: { scheduled(o: { cron: string; scheduledTime: number }): Promise<unknown> };
    }
  ).default.scheduled({ cron, scheduledTime });

describe("schedules", () => {
  async function scheduledRun(cron: string, time: number, n = 0): Promise<Envelope> {
    const key = `schedule:${cron}:${new Date(time).toISOString()}${n > 0 ? `:${n}` : ""}`;
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
    expect(us.request).toEqual({ headers: {} });
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
    const key = `schedule:7 7 7 7 *:${new Date(time).toISOString()}`;
    const id = env.RUNS.idFromName(`trig-schedule\n${key}`).toString();
    expect((await call(`/runs/${id}`)).status).toBe(404);
  });
});

describe("schedules and declared request headers", () => {
  it("records the declared request headers of a cron run as missing (null), like an invoke without them", async () => {
    const time = Date.UTC(2032, 1, 2, 3, 5, 0);
    await scheduled("*/5 * * * *", time);
    const key = `schedule:*/5 * * * *:${new Date(time).toISOString()}`;
    const cron = await waitForRun(env.RUNS.idFromName(`schedule-headers\n${key}`).toString());
    const res = await invoke("schedule-headers", {}, { wait: 10 });
    const invoked = (await res.json()) as Envelope;
    // docs/triggers.md: `request` is `{"headers": {…}}` with every declared header, a missing one null.
    expect(invoked.request).toEqual({ headers: { x_source: null } });
    expect(cron.request).toEqual(invoked.request);
    expect(cron.steps[0].output).toEqual(invoked.steps[0].output);
    expect(cron.steps[0].output).toEqual({ result: { source: null, declared: ["x_source"] } });
  });
});
