/**
 * Fire times of schedule entries in local time (src/common/local-time.ts, docs/triggers.md
 * "Schedules in local time"): the next fire times `GET /workflows/{name}/schedules` shows, the UTC
 * crons the build asks wrangler.toml for, and the zones it accepts.
 */
import { describe, expect, it } from "vitest";
import { coveringCrons, firesAt, nextFires, zoneProblem } from "../../src/common/local-time.ts";

const iso = (ts: number[]) => ts.map((t) => new Date(t).toISOString());

describe("next fire times", () => {
  it("Europe/Berlin: 09:30 on weekdays, the same wall-clock time either side of the spring change", () => {
    const next = nextFires({ cron: "30 9 * * 1-5", timezone: "Europe/Berlin" }, Date.UTC(2026, 2, 26), 4);
    expect(iso(next)).toEqual([
      "2026-03-26T08:30:00.000Z",
      "2026-03-27T08:30:00.000Z",
      "2026-03-30T07:30:00.000Z",
      "2026-03-31T07:30:00.000Z",
    ]);
  });

  it("America/New_York: a skipped 02:30 fires at 03:30, a repeated 01:30 at its first pass", () => {
    const skip = nextFires({ cron: "30 2 * * *", timezone: "America/New_York" }, Date.UTC(2026, 2, 7), 3);
    expect(iso(skip)).toEqual([
      "2026-03-07T07:30:00.000Z",
      "2026-03-08T07:30:00.000Z",
      "2026-03-09T06:30:00.000Z",
    ]);
    const repeat = nextFires(
      { cron: "30 1 * * *", timezone: "America/New_York" },
      Date.UTC(2026, 9, 31, 12),
      3,
    );
    expect(iso(repeat)).toEqual([
      "2026-11-01T05:30:00.000Z",
      "2026-11-02T06:30:00.000Z",
      "2026-11-03T06:30:00.000Z",
    ]);
  });

  it("America/New_York: an hour of `*` runs through both passes of the repeated hour, in order", () => {
    const next = nextFires(
      { cron: "*/30 * * * *", timezone: "America/New_York" },
      Date.UTC(2026, 10, 1, 4, 45),
      5,
    );
    expect(iso(next)).toEqual([
      "2026-11-01T05:00:00.000Z",
      "2026-11-01T05:30:00.000Z",
      "2026-11-01T06:00:00.000Z",
      "2026-11-01T06:30:00.000Z",
      "2026-11-01T07:00:00.000Z",
    ]);
  });

  it("Australia/Sydney: the southern hemisphere's changes in April and October", () => {
    const entry = { cron: "30 2 * * *", timezone: "Australia/Sydney" };
    // 02:30 AEDT on 2026-04-05 (its first pass), then 02:30 AEST.
    expect(iso(nextFires(entry, Date.UTC(2026, 3, 4), 2))).toEqual([
      "2026-04-04T15:30:00.000Z",
      "2026-04-05T16:30:00.000Z",
    ]);
    // 02:30 AEST, then 03:30 AEDT on 2026-10-04 (02:30 is skipped).
    expect(iso(nextFires(entry, Date.UTC(2026, 9, 2, 12), 2))).toEqual([
      "2026-10-02T16:30:00.000Z",
      "2026-10-03T16:30:00.000Z",
    ]);
  });

  it("Asia/Kolkata: half an hour off the UTC hours", () => {
    expect(iso(nextFires({ cron: "0 9 * * *", timezone: "Asia/Kolkata" }, Date.UTC(2026, 0, 1), 2))).toEqual([
      "2026-01-01T03:30:00.000Z",
      "2026-01-02T03:30:00.000Z",
    ]);
    expect(firesAt({ cron: "0 9 * * *", timezone: "Asia/Kolkata" }, Date.UTC(2026, 0, 1, 3, 30))).toBe(true);
    expect(firesAt({ cron: "0 9 * * *", timezone: "Asia/Kolkata" }, Date.UTC(2026, 0, 1, 3, 0))).toBe(false);
  });

  it("UTC entries as written, and none for a cron no date matches", () => {
    expect(iso(nextFires({ cron: "0 6 * * MON-FRI", timezone: "UTC" }, Date.UTC(2026, 0, 2, 6), 2))).toEqual([
      "2026-01-05T06:00:00.000Z",
      "2026-01-06T06:00:00.000Z",
    ]);
    expect(nextFires({ cron: "0 0 30 2 *", timezone: "Europe/Berlin" }, Date.UTC(2026, 0, 1), 1)).toEqual([]);
  });
});

describe("the UTC crons that cover an entry", () => {
  const from = Date.UTC(2026, 0, 1);

  it("keeps the days when no firing crosses midnight UTC", () => {
    expect(coveringCrons({ cron: "30 9 * * 1-5", timezone: "Europe/Berlin" }, from)).toEqual([
      "30 7,8 * * 1-5",
    ]);
  });

  it("fires every day when the local day starts on the UTC day before", () => {
    expect(coveringCrons({ cron: "0 9 * * 1-5", timezone: "Australia/Sydney" }, from)).toEqual([
      "0 22,23 * * *",
    ]);
  });

  it("follows the minutes of a zone half an hour off, for an hour of `*`", () => {
    expect(coveringCrons({ cron: "15 * * * *", timezone: "Asia/Kolkata" }, from)).toEqual(["45 * * * *"]);
  });

  it("covers a time shifted by a half-hour change (Lord Howe Island)", () => {
    // 02:15 at +10:30 and at +11, and 03:15 at +11 on the day 02:00-02:29 is skipped.
    expect(coveringCrons({ cron: "15 2 * * *", timezone: "Australia/Lord_Howe" }, from)).toEqual([
      "15,45 15 * * *",
      "15 16 * * *",
    ]);
  });

  it("is the entry's own cron in UTC and in zones at UTC all year", () => {
    expect(coveringCrons({ cron: "0 12 L-3 * *", timezone: "UTC" }, from)).toEqual(["0 12 L-3 * *"]);
    expect(coveringCrons({ cron: "0 9 * * *", timezone: "Africa/Abidjan" }, from)).toEqual(["0 9 * * *"]);
  });
});

describe("zones", () => {
  it("knows IANA names and suggests the closest for a typo", () => {
    expect(zoneProblem("America/New_York")).toBeNull();
    expect(zoneProblem("America/NewYork")).toMatch(/did you mean `America\/New_York`\?$/);
    expect(zoneProblem("+05:30")).toMatch(/^unknown time zone/);
  });
});
