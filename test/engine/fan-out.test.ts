/**
 * Fan-out (`for_each`) in the pure engine: items as child records in index order, output in
 * input order, the in-flight limit, max_failures 0 / N / -1, the item limits, a resumed run
 * running only unfinished items, item scope and summed metrics. The workers suites
 * (test/worker/fanout.test.ts) check the same against real servers and storage.
 */
import { describe, expect, it } from "vitest";
import type { CompiledStep, CompiledWorkflow, ForEach, Json, Template } from "../../src/bundle.ts";
import { createLedger } from "../../src/engine/budget.ts";
import { MAX_FANOUT_ITEMS } from "../../src/engine/fan-out.ts";
import { createMasker } from "../../src/engine/mask.ts";
import { type Executors, RunAbort, type RunHost } from "../../src/engine/run-host.ts";
import { runPipeline } from "../../src/engine/scheduler.ts";
import { StepError, type StepRecord } from "../../src/engine/types.ts";
import { executors } from "../../src/steps/index.ts";
import { testBundle, testWorkflow } from "../support/compiled.ts";

const lit = (v: Json): Template => ({ t: "lit", v });

function forEach(extra: Partial<ForEach> = {}): ForEach {
  return { from: "params.items", concurrency: null, maxItems: null, maxFailures: 0, ...extra };
}

/** A webhook step whose fake executor reads `{{ item }}`: `{ms, fail}` decide its delay and outcome. */
function fanOutStep(id: string, fe: ForEach, extra: Partial<CompiledStep> = {}): CompiledStep {
  return {
    id,
    deps: [],
    ancestors: [],
    condition: null,
    kind: "webhook",
    url: lit("http://example.test/"),
    method: "POST",
    headers: null,
    body: { t: "expr", e: "item" },
    timeoutS: 30,
    sign: null,
    forEach: fe,
    ...extra,
  } as CompiledStep;
}

interface Harness {
  host: RunHost;
  started: string[];
  finished: string[];
  maxInFlight: () => number;
}

function harness(
  workflows: CompiledWorkflow[],
  opts: { restored?: Map<string, StepRecord>; outboundLimit?: number } = {},
): Harness {
  const started: string[] = [];
  const finished: string[] = [];
  let inFlight = 0;
  let max = 0;
  const webhook: Executors["webhook"] = (_s, ctx) =>
    new Promise((resolve, reject) => {
      inFlight++;
      max = Math.max(max, inFlight);
      const item = (ctx.scope.item ?? {}) as { ms?: number; fail?: boolean; v?: Json };
      ctx.metrics.attempts += 1;
      const timer = setTimeout(() => {
        inFlight--;
        if (item.fail) reject(new StepError("webhook_failed", `item at ${ctx.path} failed`));
        else resolve({ v: item.v ?? null, index: ctx.scope.item_index ?? null, path: ctx.path });
      }, item.ms ?? 1);
      ctx.signal.addEventListener("abort", () => {
        inFlight--;
        clearTimeout(timer);
        reject(ctx.signal.reason);
      });
    });
  const host: RunHost = {
    bundle: testBundle(workflows),
    runId: "run1",
    env: {},
    // The real table with stand-ins for the kinds that reach outside (a new kind runs for real).
    executors: { ...executors, webhook, agent: async () => ({}), wait: async () => ({}) },
    masker: createMasker([]),
    fetch: () => Promise.reject(new Error("no network in unit tests")),
    now: () => Date.now(),
    restored: opts.restored ?? new Map(),
    records: new Map(),
    outboundLimit: opts.outboundLimit,
    onStepStarted: (path) => started.push(path),
    onStepFinished: (path) => finished.push(path),
  };
  return { host, started, finished, maxInFlight: () => max };
}

function options(params: Json, signal = new AbortController().signal) {
  return {
    prefix: "",
    params,
    env: {},
    deadline: Date.now() + 60_000,
    signal,
    budget: createLedger(null),
    webhooksAllowed: true,
  };
}

function wf(steps: CompiledStep[], key = "w"): CompiledWorkflow {
  return testWorkflow({ key, name: key, steps });
}

const items = (n: number, f: (i: number) => Json = (i) => ({ v: i })) =>
  Array.from({ length: n }, (_, i) => f(i));

describe("fan-out in the engine", () => {
  it("keeps results in input order when items finish out of order, and records one child per item", async () => {
    const w = wf([fanOutStep("a", forEach())]);
    const h = harness([w]);
    const out = await runPipeline(
      h.host,
      w,
      options({
        items: [
          { ms: 40, v: "x" },
          { ms: 5, v: "y" },
          { ms: 20, v: "z" },
        ],
      }),
    );
    expect(out).toEqual({
      results: [
        { v: "x", index: 0, path: "a/0" },
        { v: "y", index: 1, path: "a/1" },
        { v: "z", index: 2, path: "a/2" },
      ],
    });
    expect(h.started).toEqual(["a", "a/0", "a/1", "a/2"]);
    // Items are persisted as they finish, the step last.
    expect(h.finished).toEqual(["a/1", "a/2", "a/0", "a"]);
    expect(h.host.records.get("a/1")).toMatchObject({ id: "1", status: "complete" });
    expect(h.host.records.get("a")?.metrics.attempts).toBe(3);
  });

  it("has at most `concurrency` items in flight and starts them in index order", async () => {
    const w = wf([fanOutStep("a", forEach({ concurrency: 2 }))]);
    const h = harness([w]);
    await runPipeline(h.host, w, options({ items: items(7, (i) => ({ ms: 10 + ((i * 7) % 5) })) }));
    expect(h.maxInFlight()).toBe(2);
    expect(h.started.slice(1)).toEqual(items(7, (i) => `a/${i}`));
  });

  it("never has more items in flight than the run's outbound limit, whatever concurrency says", async () => {
    for (const concurrency of [null, 50]) {
      const w = wf([fanOutStep("a", forEach({ concurrency }))]);
      const h = harness([w], { outboundLimit: 6 });
      await runPipeline(h.host, w, options({ items: items(20, () => ({ ms: 10 })) }));
      expect(h.maxInFlight()).toBe(6);
    }
  });

  it("with max_failures 0 fails at the first failure: in-flight items canceled, the rest never started", async () => {
    const w = wf([fanOutStep("a", forEach({ concurrency: 3 }))]);
    const h = harness([w]);
    const list: Json[] = [{ ms: 200 }, { ms: 5, fail: true }, { ms: 200 }, { ms: 1 }, { ms: 1 }];
    const err = await runPipeline(h.host, w, options({ items: list })).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StepError);
    expect(err).toMatchObject({ code: "fanout_failed", subPath: "a" });
    expect((err as Error).message).toMatch(
      /^1 of 5 items failed .*first: item 1: webhook_failed: item at a\/1 failed/,
    );
    expect(h.started).toEqual(["a", "a/0", "a/1", "a/2"]);
    expect(h.host.records.get("a/0")?.status).toBe("canceled");
    expect(h.host.records.get("a/1")?.status).toBe("failed");
    expect(h.host.records.get("a/2")?.status).toBe("canceled");
    expect(h.host.records.has("a/3")).toBe(false);
    expect(h.host.records.get("a")).toMatchObject({ status: "failed", error: { code: "fanout_failed" } });
  });

  it("with max_failures N tolerates N failed items and records them as ktsu_error entries", async () => {
    const w = wf([fanOutStep("a", forEach({ maxFailures: 2 }))]);
    const h = harness([w]);
    const out = await runPipeline(
      h.host,
      w,
      options({ items: [{ v: 0 }, { fail: true }, { v: 2 }, { fail: true }] }),
    );
    expect(out).toEqual({
      results: [
        { v: 0, index: 0, path: "a/0" },
        { ktsu_error: "webhook_failed: item at a/1 failed", item_index: 1 },
        { v: 2, index: 2, path: "a/2" },
        { ktsu_error: "webhook_failed: item at a/3 failed", item_index: 3 },
      ],
    });
    expect(h.host.records.get("a")?.status).toBe("complete");
    expect(h.host.records.get("a/3")).toMatchObject({ status: "failed", error: { code: "webhook_failed" } });
  });

  it("with max_failures N fails once N + 1 items failed, naming the count and the first failure", async () => {
    const w = wf([fanOutStep("a", forEach({ maxFailures: 1, concurrency: 1 }))]);
    const h = harness([w]);
    const list: Json[] = [{ fail: true }, { v: 1 }, { fail: true }, { v: 3 }, { v: 4 }];
    const err = await runPipeline(h.host, w, options({ items: list })).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: "fanout_failed" });
    expect((err as Error).message).toMatch(
      /^2 of 5 items failed \(max_failures: 1\); first: item 0: webhook_failed/,
    );
    expect(h.host.records.has("a/3")).toBe(false);
  });

  it("with max_failures -1 completes whatever fails", async () => {
    const w = wf([fanOutStep("a", forEach({ maxFailures: -1 }))]);
    const h = harness([w]);
    const out = (await runPipeline(h.host, w, options({ items: items(4, () => ({ fail: true })) }))) as {
      results: Array<{ item_index: number }>;
    };
    expect(out.results.map((r) => r.item_index)).toEqual([0, 1, 2, 3]);
  });

  it("completes an empty array with no items", async () => {
    const w = wf([fanOutStep("a", forEach())]);
    const h = harness([w]);
    expect(await runPipeline(h.host, w, options({ items: [] }))).toEqual({ results: [] });
    expect(h.started).toEqual(["a"]);
  });

  it("fails with expression_error when from is not an array", async () => {
    const w = wf([fanOutStep("a", forEach())]);
    const h = harness([w]);
    const err = await runPipeline(h.host, w, options({ items: { a: 1 } })).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: "expression_error" });
    expect((err as Error).message).toContain("gave an object, not an array");
  });

  it("fails with too_many_items over 1000 items without max_items, and keeps the first N with it", async () => {
    const many = items(MAX_FANOUT_ITEMS + 1, () => ({}));
    const w = wf([fanOutStep("a", forEach())]);
    const h = harness([w]);
    const err = await runPipeline(h.host, w, options({ items: many })).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: "too_many_items" });
    expect(h.started).toEqual(["a"]);

    const capped = wf([fanOutStep("a", forEach({ maxItems: 3 }))]);
    const h2 = harness([capped]);
    const out = (await runPipeline(h2.host, capped, options({ items: many }))) as { results: unknown[] };
    expect(out.results).toHaveLength(3);
  });

  it("skips the whole step when its condition is false, evaluated once before the fan-out", async () => {
    const w = wf([fanOutStep("a", forEach(), { condition: "params.go" })]);
    const h = harness([w]);
    expect(await runPipeline(h.host, w, options({ go: false, items: [{}] }))).toEqual({
      skipped: true,
      reason: "condition_false",
    });
    expect(h.started).toEqual(["a"]);
  });

  it("resumes with only the unfinished items: restored ones keep their record, failures included", async () => {
    const restored = new Map<string, StepRecord>();
    const done = (id: string, extra: Partial<StepRecord>): StepRecord => ({
      id,
      status: "complete",
      output: null,
      error: null,
      started_at: "2026-01-01T00:00:00.000Z",
      finished_at: "2026-01-01T00:00:01.000Z",
      metrics: {
        duration_ms: 1000,
        tokens_in: 0,
        tokens_out: 0,
        cost_usd: 0,
        llm_calls: 0,
        attempts: 1,
        tool_calls: 0,
      },
      tool_calls: [],
      annotations: null,
      steps: [],
      ...extra,
    });
    restored.set("a/0", done("0", { output: { restored: 0 } }));
    restored.set("a/2", done("2", { status: "failed", error: { code: "webhook_failed", message: "boom" } }));
    const w = wf([fanOutStep("a", forEach({ maxFailures: 1 }))]);
    const h = harness([w], { restored });
    const out = await runPipeline(h.host, w, options({ items: items(4) }));
    expect(h.started).toEqual(["a", "a/1", "a/3"]);
    expect(out).toEqual({
      results: [
        { restored: 0 },
        { v: 1, index: 1, path: "a/1" },
        { ktsu_error: "webhook_failed: boom", item_index: 2 },
        { v: 3, index: 3, path: "a/3" },
      ],
    });
    // Metrics count every item once, restored ones included.
    expect(h.host.records.get("a")?.metrics.attempts).toBe(4);
  });

  it("cancels the items in flight when the run is aborted", async () => {
    const w = wf([fanOutStep("a", forEach({ concurrency: 2 }))]);
    const h = harness([w]);
    const ac = new AbortController();
    const p = runPipeline(h.host, w, options({ items: items(5, () => ({ ms: 500 })) }, ac.signal));
    setTimeout(() => ac.abort(new RunAbort("timeout")), 20);
    await expect(p).rejects.toBeInstanceOf(RunAbort);
    expect(h.host.records.get("a/0")?.status).toBe("canceled");
    expect(h.host.records.get("a/1")?.status).toBe("canceled");
    expect(h.host.records.has("a/2")).toBe(false);
    expect(h.host.records.get("a")?.status).toBe("canceled");
  });

  it("runs a sub-workflow per item, the child's records under the item", async () => {
    const child = wf(
      [
        {
          id: "shape",
          deps: [],
          ancestors: [],
          condition: null,
          kind: "transform",
          inputs: null,
          ops: [{ op: "map", expr: "n" }],
          outputSchema: null,
        },
      ],
      "child.yaml",
    );
    const parent = wf([
      {
        id: "each",
        deps: [],
        ancestors: [],
        condition: null,
        kind: "workflow",
        workflow: "child.yaml",
        input: { t: "obj", entries: [["n", { t: "expr", e: "item_index" }]] },
        webhooks: "suppress",
        forEach: forEach(),
      } as CompiledStep,
    ]);
    const h = harness([parent, child]);
    const out = await runPipeline(h.host, parent, options({ items: ["a", "b"] }));
    expect(out).toEqual({ results: [{ result: [0] }, { result: [1] }] });
    expect(h.host.records.get("each/1/shape")).toMatchObject({ status: "complete", output: { result: [1] } });
    expect(h.host.records.has("each/shape")).toBe(false);
  });
});
