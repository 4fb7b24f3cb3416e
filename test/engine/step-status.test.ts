/**
 * The one writer of step statuses (src/engine/step-status.ts): its transitions, and a check of
 * the source that no other module of the Worker assigns a step's status (the run's status has
 * one writer too: the lifecycle's `setStatus` and its end).
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { pendingRecord } from "../../src/engine/step-records.ts";
import {
  heldRecords,
  markHeld,
  markResumed,
  markRunEnded,
  markRunning,
} from "../../src/engine/step-status.ts";

const SRC = fileURLToPath(new URL("../../src", import.meta.url));

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return name === "generated" || name === "browser" ? [] : sources(path);
    return path.endsWith(".ts") ? [path] : [];
  });
}

/** Assignments of a `.status` that are allowed, by file: what is assigned there, and why it is no step's. */
const ALLOWED: Record<string, RegExp> = {
  "engine/step-status.ts": /^rec$/, // the writer itself
  "run/lifecycle/lifecycle-core.ts": /^doc$/, // the run's status (setStatus, and the run's end)
  "run/waits/waits.ts": /^rec$/, // a wait's own record (signaled, slept, timeout), not a step's
  "common/problem.ts": /^this$/, // an HTTP status code
  "run/lifecycle/run-compensation.ts": /^(st|comp)$/, // a compensation's progress, not a step's
};

/** Files that copy a record with another status, and whose record it is. */
const COPIES_ALLOWED = new Set([
  "engine/step-status.ts", // the writer itself
  "run/listing/listing-shard.ts", // a listing entry's status (a tombstone), not a step's
  "run/lifecycle/run-view.ts", // a compensation's progress as it was when it started, not a step's
]);

describe("step statuses", () => {
  it("are assigned in src/engine/step-status.ts alone", () => {
    const offenders: string[] = [];
    for (const file of sources(SRC)) {
      const rel = relative(SRC, file).replaceAll("\\", "/");
      const text = readFileSync(file, "utf8");
      for (const m of text.matchAll(/([\w.]+)\.status\s*=(?!=)/g)) {
        const lhs = (m[1] as string).split(".").pop() as string;
        if (!ALLOWED[rel]?.test(lhs)) offenders.push(`${rel}: ${m[0]}`);
      }
      // A copy with another status is a write too (the way a view once re-derived `waiting`).
      if (!COPIES_ALLOWED.has(rel) && /\.\.\.\w+,\s*status:\s*"/.test(text))
        offenders.push(`${rel}: a copy with a status`);
    }
    expect(offenders).toEqual([]);
  });

  it("hold a running step while it waits, and run it again only from pending_approval", () => {
    const rec = pendingRecord("a");
    expect(markHeld(rec, "waiting")).toBe(false);
    markRunning(rec, "2026-11-25T12:00:00.000Z");
    expect(markHeld(rec, "pending_approval")).toBe(true);
    expect(rec.status).toBe("pending_approval");
    expect(markResumed(rec)).toBe(true);
    expect(rec.status).toBe("running");
    expect(markResumed(rec)).toBe(false);
  });

  it("at the run's end cancel a step under way (as a copy) and skip one that never started", () => {
    const running = pendingRecord("a");
    markRunning(running, "2026-11-25T12:00:00.000Z");
    const now = Date.parse("2026-11-25T12:00:02Z");
    const ended = markRunEnded(running, now, "run_failed");
    expect(ended).not.toBe(running);
    expect(running.status).toBe("running");
    expect(ended).toMatchObject({ status: "canceled", metrics: { duration_ms: 2000 } });
    expect(markRunEnded(pendingRecord("b"), now, "run_canceled")).toMatchObject({
      status: "skipped",
      output: { skipped: true, reason: "run_canceled" },
    });
  });

  it("show a step held by storage (a pending approval, a waiting wait) as such right after a wake-up", () => {
    const parent = pendingRecord("review");
    const child = pendingRecord("charge");
    const wait = pendingRecord("payment");
    for (const r of [parent, child, wait]) markRunning(r, "2026-11-25T12:00:00.000Z");
    const records = new Map([
      ["review", parent],
      ["review/charge", child],
      ["payment", wait],
    ]);
    const shown = heldRecords(records, { approvals: ["review/charge"], waits: ["payment"] });
    expect([...shown.values()].map((r) => r.status)).toEqual([
      "pending_approval",
      "pending_approval",
      "waiting",
    ]);
    expect(child.status).toBe("running");
  });
});
