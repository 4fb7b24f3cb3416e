/**
 * Operations: every finished run writes exactly one structured JSON line to the console, which
 * Workers Logs (`[observability]` in wrangler.toml) indexes field by field, so runs can be
 * searched in the dashboard or Logpush without the run listing.
 */

import { afterEach, beforeEach, describe, expect, it, type MockInstance, vi } from "vitest";
import { poll } from "../../support/poll.ts";
import { call, invoke, run } from "../../worker/harness.ts";

let spy: MockInstance;
let lines: string[] = [];

beforeEach(() => {
  lines = [];
  spy = vi.spyOn(console, "log").mockImplementation((...args: unknown[]) => {
    lines.push(args.map(String).join(" "));
  });
});
afterEach(() => spy.mockRestore());

/** The parsed log lines of one run, once its run.finished line is there (written as the run finishes). */
async function linesOf(runId: string): Promise<Array<Record<string, unknown>>> {
  const mine = () => lines.filter((l) => l.startsWith("{") && l.includes(runId));
  await poll(`${runId}'s log line`, mine, (ls) => ls.some((l) => l.includes('"run.finished"')));
  return mine().map((l) => JSON.parse(l) as Record<string, unknown>);
}

describe("the finished-run log line", () => {
  it("is one JSON object with the run's id, workflow, status, duration, cost, steps and trace", async () => {
    const e = await run("basic", { items: [{ name: "pen", price: 2 }] });
    const found = await linesOf(e.run_id);
    expect(found).toHaveLength(1);
    expect(found[0]).toEqual({
      event: "run.finished",
      run_id: e.run_id,
      workflow: "basic",
      workflow_version: "1.0.0",
      status: "complete",
      error_code: null,
      error_step: null,
      duration_ms: e.totals.duration_ms,
      cost_usd: 0,
      tokens_in: 0,
      tokens_out: 0,
      llm_calls: 0,
      steps: { total: 4, complete: 3, skipped: 1 },
      created_at: e.created_at,
      finished_at: e.finished_at,
      trace_id: e.trace_id,
      spans_dropped: 0,
    });
  });

  it("names the error code and the failing step of a failed run", async () => {
    const e = await run("failing-child");
    const [line] = await linesOf(e.run_id);
    expect(line).toMatchObject({
      status: "failed",
      error_code: "expression_error",
      error_step: "inner/boom",
      steps: { total: 1, failed: 1 },
    });
  });

  it("is written once per run: reading or replaying the run logs nothing more", async () => {
    const e = await run("basic", { items: [] });
    await call(`/runs/${e.run_id}`);
    await call(`/runs/${e.run_id}/events`).then((r) => r.text());
    expect(await linesOf(e.run_id)).toHaveLength(1);
  });

  it("is written for a canceled run", async () => {
    const res = await invoke("deadline", {});
    const { run_id } = (await res.json()) as { run_id: string };
    await call(`/runs/${run_id}/cancel`, { method: "POST" });
    const [line] = await linesOf(run_id);
    expect(line).toMatchObject({ status: "canceled", error_code: "canceled" });
  });
});
