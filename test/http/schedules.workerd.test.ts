/**
 * `GET /workflows/{name}/schedules` (docs/http-api.md): each schedule entry with its next fire
 * times, the ones the cron handler starts (test/triggers/cron), without credentials.
 */
import { describe, expect, it } from "vitest";
import { expectShape } from "../support/api-shapes.ts";
import { call } from "../worker/harness.ts";

describe("GET /workflows/{name}/schedules", () => {
  it("lists every entry, in file order, with its next fire times in UTC after `from`", async () => {
    const res = await call("/workflows/tz-schedule/schedules?from=2026-03-07T12:00:00Z&count=2");
    expect(res.status).toBe(200);
    const body = (await res.json()) as {
      schedules: Array<{ cron: string; timezone: string; next: string[] }>;
    };
    expectShape("Schedules", body);
    expect(body.schedules.map((s) => s.timezone)).toEqual([
      "Europe/Berlin",
      "America/New_York",
      "America/New_York",
      "America/New_York",
      "Australia/Sydney",
      "Asia/Kolkata",
    ]);
    // New York's 02:30 is skipped on 2026-03-08: that day it fires at 03:30 EDT.
    expect(body.schedules[1]).toEqual({
      index: 1,
      cron: "30 2 * * *",
      timezone: "America/New_York",
      paused: false,
      next: ["2026-03-08T07:30:00.000Z", "2026-03-09T06:30:00.000Z"],
    });
    expect(body.schedules[5]?.next).toEqual(["2026-03-08T03:30:00.000Z", "2026-03-09T03:30:00.000Z"]);
  });

  it("shows five fire times from now by default, and UTC entries as UTC", async () => {
    const res = await call("/workflows/trig-schedule/schedules");
    const body = (await res.json()) as {
      schedules: Array<{ cron: string; timezone: string; next: string[] }>;
    };
    expect(body.schedules.map((s) => [s.cron, s.timezone, s.next.length])).toEqual([
      ["*/5 * * * *", "UTC", 5],
      ["0 6 * * MON-FRI", "UTC", 5],
      ["0 6 * * MON-FRI", "UTC", 5],
    ]);
    const first = Date.parse(body.schedules[0]?.next[0] ?? "");
    expect(first).toBeGreaterThan(Date.now() - 1000);
    expect(first).toBeLessThanOrEqual(Date.now() + 5 * 60_000);
  });

  it("needs no credentials, and lists none for a workflow without a schedule", async () => {
    const res = await call("/workflows/auth-bearer/schedules");
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ schedules: [] });
  });

  it("refuses a bad `from` or `count` with 400 invalid_query", async () => {
    for (const q of ["from=yesterday", "count=0", "count=51", "count=2&count=3"]) {
      const res = await call(`/workflows/tz-schedule/schedules?${q}`);
      expect(res.status, q).toBe(400);
      expect(res.headers.get("content-type")).toBe("application/problem+json");
      expect(((await res.json()) as { code: string }).code).toBe("invalid_query");
    }
  });

  it("is 404 workflow_not_found for a workflow that is not deployed", async () => {
    const res = await call("/workflows/tz-schedul/schedules");
    expect(res.status).toBe(404);
    const problem = (await res.json()) as { code: string; detail: string };
    expect(problem.code).toBe("workflow_not_found");
    expect(problem.detail).toContain("tz-schedule");
  });
});
