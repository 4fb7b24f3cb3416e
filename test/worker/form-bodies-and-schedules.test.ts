/**
 * Triggers (SPEC section 5) at points where the Worker once was off the contract:
 * each test here failed before its fix.
 */
import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { call, type Envelope, invoke, waitForRun } from "./harness.ts";

const FORM = "application/x-www-form-urlencoded";

function postForm(name: string, body: string) {
  return call(`/invoke/${name}`, {
    method: "POST",
    headers: { "content-type": FORM, prefer: "wait=10" },
    body,
  });
}

describe("form bodies", () => {
  it("keeps a lone `payload` that does not parse as a JSON object as a string field (no 400)", async () => {
    // SPEC: the payload is unwrapped only when "it parses as a JSON object"; otherwise the form
    // is the params object of strings, whatever the field's text starts with.
    for (const text of ["{not json", '{"a":1', "{}}"]) {
      const res = await postForm("trig-form", `payload=${encodeURIComponent(text)}`);
      expect(res.status, text).toBe(200);
      expect(((await res.json()) as Envelope).params, text).toEqual({ payload: text });
    }
  });
});

describe("schedules", () => {
  const scheduled = (cron: string, scheduledTime: number) =>
    (
      exports as unknown as {
        default: { scheduled(o: { cron: string; scheduledTime: number }): Promise<unknown> };
      }
    ).default.scheduled({ cron, scheduledTime });

  it("records the declared request headers of a cron run as missing (null), like an invoke without them", async () => {
    const time = Date.UTC(2032, 1, 2, 3, 5, 0);
    await scheduled("*/5 * * * *", time);
    const key = `schedule:*/5 * * * *:${new Date(time).toISOString()}`;
    const cron = await waitForRun(env.RUNS.idFromName(`schedule-headers\n${key}`).toString());
    const res = await invoke("schedule-headers", {}, { wait: 10 });
    const invoked = (await res.json()) as Envelope;
    // SPEC: `request` is `{"headers": {…}}` with every declared header, a missing one null.
    expect(invoked.request).toEqual({ headers: { x_source: null } });
    expect(cron.request).toEqual(invoked.request);
    expect(cron.steps[0].output).toEqual(invoked.steps[0].output);
    expect(cron.steps[0].output).toEqual({ result: { source: null, declared: ["x_source"] } });
  });
});
