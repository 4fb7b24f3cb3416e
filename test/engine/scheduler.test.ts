/**
 * The scheduler without a Durable Object: dependency order, concurrency, conditions, failure
 * propagation, resume from restored records, sub-workflows and masking of recorded values.
 */

import { describe, expect, it } from "vitest";
import type { CompiledStep, CompiledWorkflow, Json, Template } from "../../src/bundle.ts";
import { createLedger } from "../../src/engine/budget.ts";
import { createMasker } from "../../src/engine/mask.ts";
import { type Executors, RunAbort, type RunHost } from "../../src/engine/run-host.ts";
import { runPipeline } from "../../src/engine/scheduler.ts";
import { StepError, type StepRecord } from "../../src/engine/types.ts";
import { executors } from "../../src/steps/index.ts";
import { testBundle, testWorkflow } from "../support/compiled.ts";
import { poll } from "../support/poll.ts";

const lit = (v: Json): Template => ({ t: "lit", v });

function step(id: string, deps: string[], extra: Partial<CompiledStep> = {}): CompiledStep {
  return {
    id,
    deps,
    ancestors: deps,
    condition: null,
    kind: "webhook",
    url: lit("http://example.test/"),
    method: "POST",
    headers: null,
    body: null,
    timeoutS: 30,
    sign: null,
    ...extra,
  } as CompiledStep;
}

function workflow(
  key: string,
  steps: CompiledStep[],
  extra: Partial<CompiledWorkflow> = {},
): CompiledWorkflow {
  return testWorkflow({ key, name: key, steps, ...extra });
}

interface Harness {
  host: RunHost;
  finished: string[];
  started: string[];
  calls: string[];
}

/** Webhook steps are faked: `delays[id]` ms then `{id}` output, or a StepError when listed in `fail`. */
function harness(
  workflows: CompiledWorkflow[],
  opts: {
    delays?: Record<string, number>;
    fail?: string[];
    secrets?: string[];
    restored?: Map<string, StepRecord>;
  } = {},
): Harness {
  const finished: string[] = [];
  const started: string[] = [];
  const calls: string[] = [];
  const bundle = testBundle(workflows);
  const webhook: Executors["webhook"] = (s, ctx) =>
    new Promise((resolve, reject) => {
      calls.push(ctx.path);
      const timer = setTimeout(() => {
        if (opts.fail?.includes(s.id)) reject(new StepError("webhook_failed", `${s.id} failed`));
        else resolve({ id: s.id, secret: (opts.secrets ?? [])[0] ?? null });
      }, opts.delays?.[s.id] ?? 1);
      ctx.signal.addEventListener("abort", () => {
        clearTimeout(timer);
        reject(ctx.signal.reason);
      });
    });
  const host: RunHost = {
    bundle,
    runId: "run1",
    env: {},
    // The real table with stand-ins for the kinds that reach outside (a new kind runs for real).
    executors: { ...executors, webhook, agent: async () => ({}), wait: async () => ({}) },
    masker: createMasker(opts.secrets ?? []),
    fetch: () => Promise.reject(new Error("no network in unit tests")),
    now: () => Date.now(),
    restored: opts.restored ?? new Map(),
    records: new Map(),
    onStepStarted: (path) => started.push(path),
    onStepFinished: (path) => finished.push(path),
  };
  return { host, finished, started, calls };
}

function options(signal = new AbortController().signal) {
  return {
    prefix: "",
    params: { n: 1 } as Json,
    env: {},
    deadline: Date.now() + 60_000,
    signal,
    budget: createLedger(null),
    webhooksAllowed: true,
  };
}

describe("scheduler", () => {
  it("runs steps in order by default and returns the last step's output", async () => {
    const wf = workflow("w", [step("a", []), step("b", ["a"]), step("c", ["b"])]);
    const h = harness([wf]);
    const out = await runPipeline(h.host, wf, options());
    expect(h.started).toEqual(["a", "b", "c"]);
    expect(out).toEqual({ id: "c", secret: null });
  });

  it("starts independent steps together", async () => {
    const wf = workflow("w", [step("a", [], {}), step("b", []), step("c", ["a", "b"])]);
    const h = harness([wf], { delays: { a: 50, b: 50 } });
    const p = runPipeline(h.host, wf, options());
    // Both started before either finished (each takes 50 ms).
    await poll(
      "a and b started",
      () => h.started.length,
      (n) => n >= 2,
    );
    expect(h.started).toEqual(["a", "b"]);
    expect(h.host.records.get("a")?.status).toBe("running");
    await p;
    expect(h.started).toEqual(["a", "b", "c"]);
  });

  it("skips a step whose condition is false and lets dependents read the skip object", async () => {
    const wf = workflow("w", [
      step("a", []),
      step("b", ["a"], { condition: "step.a.id == 'zzz'" }),
      {
        id: "c",
        deps: ["b"],
        ancestors: ["a", "b"],
        condition: null,
        kind: "transform",
        inputs: [{ t: "expr", e: "{skipped: step.b.skipped, other: step.b.id}" }],
        ops: [],
        outputSchema: null,
      },
    ]);
    const h = harness([wf]);
    const out = await runPipeline(h.host, wf, options());
    expect(h.host.records.get("b")?.output).toEqual({ skipped: true, reason: "condition_false" });
    expect(out).toEqual({ result: { skipped: true, other: null } });
    expect(h.calls).toEqual(["a"]);
  });

  it("fails fast: a failed step cancels running siblings and skips the rest", async () => {
    const wf = workflow("w", [step("bad", []), step("slow", []), step("after", ["bad", "slow"])]);
    const h = harness([wf], { fail: ["bad"], delays: { bad: 5, slow: 500 } });
    const err = await runPipeline(h.host, wf, options()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StepError);
    expect((err as StepError).code).toBe("webhook_failed");
    expect((err as StepError).subPath).toBe("bad");
    expect(h.host.records.get("bad")?.status).toBe("failed");
    expect(h.host.records.get("slow")?.status).toBe("canceled");
    expect(h.host.records.get("after")?.output).toEqual({ skipped: true, reason: "run_failed" });
  });

  it("stops on the run signal: running steps canceled, unstarted skipped as run_canceled", async () => {
    const wf = workflow("w", [step("a", [], {}), step("b", ["a"])]);
    const h = harness([wf], { delays: { a: 1000 } });
    const ctl = new AbortController();
    const p = runPipeline(h.host, wf, options(ctl.signal)).catch((e: unknown) => e);
    await poll(
      "a running",
      () => h.host.records.get("a")?.status,
      (s) => s === "running",
    );
    ctl.abort(new RunAbort("canceled"));
    expect(await p).toBeInstanceOf(RunAbort);
    expect(h.host.records.get("a")?.status).toBe("canceled");
    expect(h.host.records.get("b")?.output).toEqual({ skipped: true, reason: "run_canceled" });
  });

  it("does not repeat steps restored as finished", async () => {
    const wf = workflow("w", [step("a", []), step("b", ["a"])]);
    const restored = new Map<string, StepRecord>([
      [
        "a",
        {
          id: "a",
          status: "complete",
          output: { id: "a", restored: true },
          error: null,
          started_at: null,
          finished_at: null,
          metrics: {
            duration_ms: 0,
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
        },
      ],
    ]);
    const h = harness([wf], { restored });
    await runPipeline(h.host, wf, options());
    expect(h.calls).toEqual(["b"]);
    expect(h.host.records.get("a")?.output).toEqual({ id: "a", restored: true });
  });

  it("masks secrets in recorded outputs", async () => {
    const wf = workflow("w", [step("a", [])]);
    const h = harness([wf], { secrets: ["super-secret-value"] });
    const out = await runPipeline(h.host, wf, options());
    expect(out).toEqual({ id: "a", secret: "***" });
  });

  it("runs a sub-workflow inline under the step's path and suppresses its webhooks by default", async () => {
    const child = workflow("child.yaml", [
      {
        id: "shape",
        deps: [],
        ancestors: [],
        condition: null,
        kind: "transform",
        inputs: null,
        ops: [],
        outputSchema: null,
      },
      step("post", ["shape"]),
    ]);
    const parent = workflow("parent.yaml", [
      {
        id: "quiet",
        deps: [],
        ancestors: [],
        condition: null,
        kind: "workflow",
        workflow: "child.yaml",
        input: lit({ x: 1 }),
        webhooks: "suppress",
      },
      {
        id: "loud",
        deps: ["quiet"],
        ancestors: ["quiet"],
        condition: null,
        kind: "workflow",
        workflow: "child.yaml",
        input: lit({ x: 2 }),
        webhooks: "execute",
      },
    ]);
    const h = harness([parent, child]);
    const out = await runPipeline(h.host, parent, options());
    expect(h.host.records.get("quiet/shape")?.output).toEqual({ result: { x: 1 } });
    expect(h.host.records.get("quiet/post")?.output).toEqual({
      skipped: true,
      reason: "webhooks_suppressed",
    });
    expect(h.calls).toEqual(["loud/post"]);
    expect(out).toEqual({ id: "post", secret: null });
  });

  it("fails a workflow step with invalid_input when its input does not match the child's schema", async () => {
    const child = workflow("child.yaml", [step("post", [])], {
      paramsSchema: { type: "object", required: ["x"] },
    });
    const parent = workflow("parent.yaml", [
      {
        id: "sub",
        deps: [],
        ancestors: [],
        condition: null,
        kind: "workflow",
        workflow: "child.yaml",
        input: lit({}),
        webhooks: "execute",
      },
    ]);
    const h = harness([parent, child]);
    const err = (await runPipeline(h.host, parent, options()).catch((e: unknown) => e)) as StepError;
    expect(err.code).toBe("invalid_input");
    expect(h.calls).toEqual([]);
  });
});
