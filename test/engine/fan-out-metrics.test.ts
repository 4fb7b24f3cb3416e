/**
 * Fan-out metrics (docs/file-format.md: "Metrics of the step are the items' sums,
 * and run totals count each item once"): the sums hold while the fan-out runs, so the envelope
 * and the run totals of a run read mid-fan-out already count its finished items, and a resumed
 * fan-out counts its restored items once.
 */

import { describe, expect, it } from "vitest";
import type { CompiledStep, CompiledWorkflow, Json } from "../../src/bundle.ts";
import { createLedger } from "../../src/engine/budget.ts";
import { createMasker } from "../../src/engine/mask.ts";
import type { Executors, RunHost } from "../../src/engine/run-host.ts";
import { runPipeline } from "../../src/engine/scheduler.ts";
import { emptyMetrics, type StepRecord } from "../../src/engine/types.ts";
import { executors } from "../../src/steps/index.ts";
import { testBundle, testWorkflow } from "../support/compiled.ts";
import { poll } from "../support/poll.ts";

/** A webhook fan-out over `params.items` whose fake executor holds each item `{ms}` and costs $0.01. */
function fanOut(id: string): CompiledStep {
  return {
    id,
    deps: [],
    ancestors: [],
    condition: null,
    kind: "webhook",
    url: { t: "lit", v: "http://example.test/" },
    method: "POST",
    headers: null,
    body: null,
    timeoutS: 30,
    sign: null,
    forEach: { from: "params.items", concurrency: null, maxItems: null, maxFailures: 0 },
  } as CompiledStep;
}

function host(w: CompiledWorkflow, restored = new Map<string, StepRecord>()): RunHost {
  const webhook: Executors["webhook"] = (_s, ctx) =>
    new Promise((resolve) => {
      const item = ctx.scope.item as { ms: number };
      ctx.metrics.attempts += 1;
      ctx.metrics.cost_usd += 0.01;
      ctx.metrics.llm_calls += 1;
      setTimeout(() => resolve({ ok: true }), item.ms);
    });
  return {
    bundle: testBundle([w]),
    runId: "run1",
    env: {},
    // The real table with stand-ins for the kinds that reach outside (a new kind runs for real).
    executors: { ...executors, webhook, agent: async () => ({}), wait: async () => ({}) },
    masker: createMasker([]),
    fetch: () => Promise.reject(new Error("no network in unit tests")),
    now: () => Date.now(),
    restored,
    records: new Map(),
    onStepFinished: () => {},
  };
}

function options(params: Json) {
  return {
    prefix: "",
    params,
    env: {},
    deadline: Date.now() + 60_000,
    signal: new AbortController().signal,
    budget: createLedger(null),
    webhooksAllowed: true,
  };
}

describe("a fan-out step's metrics", () => {
  it("are the sums of the items finished so far while the fan-out still runs", async () => {
    const w = testWorkflow({ key: "w", name: "w", steps: [fanOut("a")] });
    const h = host(w);
    const done = runPipeline(h, w, options({ items: [{ ms: 5 }, { ms: 5 }, { ms: 400 }] }));
    // The two quick items have finished; the slow one runs on.
    await poll(
      "items 0 and 1 complete",
      () => [h.records.get("a/0")?.status, h.records.get("a/1")?.status],
      (s) => s.every((x) => x === "complete"),
    );
    const step = h.records.get("a");
    expect(step?.status).toBe("running");
    expect(h.records.get("a/2")?.status).toBe("running");
    expect(step?.metrics).toMatchObject({ attempts: 2, llm_calls: 2 });
    expect(step?.metrics.cost_usd).toBeCloseTo(0.02, 12);
    await done;
    expect(step?.metrics).toMatchObject({ attempts: 3, llm_calls: 3 });
    expect(step?.metrics.cost_usd).toBeCloseTo(0.03, 12);
  });

  it("count a restored item once when a resumed fan-out runs the rest", async () => {
    const w = testWorkflow({ key: "w", name: "w", steps: [fanOut("a")] });
    const restoredItem: StepRecord = {
      id: "0",
      status: "complete",
      output: { ok: true },
      error: null,
      started_at: new Date().toISOString(),
      finished_at: new Date().toISOString(),
      metrics: { ...emptyMetrics(), attempts: 1, llm_calls: 1, cost_usd: 0.01 },
      tool_calls: [],
      annotations: null,
      steps: [],
    };
    const h = host(w, new Map([["a/0", restoredItem]]));
    await runPipeline(h, w, options({ items: [{ ms: 1 }, { ms: 1 }] }));
    expect(h.records.get("a")?.metrics).toMatchObject({ attempts: 2, llm_calls: 2 });
    expect(h.records.get("a")?.metrics.cost_usd).toBeCloseTo(0.02, 12);
  });
});
