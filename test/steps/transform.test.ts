/**
 * The transform step as a workflow author sees it: where its input comes from (explicit
 * inputs, its dependencies, or params), the `{result}` output, and output.schema checks.
 */
import { describe, expect, it } from "vitest";
import type { Json, JsonObject, TransformStep } from "../../src/bundle.ts";
import { emptyMetrics, type StepContext, StepError } from "../../src/engine/types.ts";
import { executeTransform } from "../../src/steps/transform.ts";
import { testBundle, testWorkflow } from "../support/compiled.ts";

const workflow = testWorkflow({ key: "t.workflow.yaml", name: "t" });
const bundle = testBundle([workflow]);

function context(scope: { params?: Json; step?: JsonObject }): StepContext {
  return {
    bundle,
    runId: "run-1",
    path: "shape",
    workflow,
    scope: { params: scope.params ?? {}, env: {}, step: scope.step ?? {} },
    signal: new AbortController().signal,
    deadline: Date.now() + 60_000,
    env: {},
    fetch: () => Promise.reject(new Error("a transform makes no requests")),
    metrics: emptyMetrics(),
    budget: { capUsd: null, reserve: () => Promise.reject(new Error("no budget in a transform")) },
  };
}

function step(overrides: Partial<TransformStep>): TransformStep {
  return {
    kind: "transform",
    id: "shape",
    deps: [],
    ancestors: [],
    condition: null,
    inputs: null,
    ops: [],
    outputSchema: null,
    ...overrides,
  };
}

describe("transform step", () => {
  it("transforms the output of its only dependency", async () => {
    const s = step({ deps: ["fetch"], ancestors: ["fetch"], ops: [{ op: "map", expr: "name" }] });
    const out = await executeTransform(s, context({ step: { fetch: [{ name: "a" }, { name: "b" }] } }));
    expect(out).toEqual({ result: ["a", "b"] });
  });

  it("deep-merges the outputs of several dependencies in dependency order", async () => {
    const s = step({ deps: ["a", "b"], ancestors: ["a", "b"] });
    const out = await executeTransform(
      s,
      context({ step: { b: { x: "from b", list: [2] }, a: { x: "from a", y: 1, list: [1] } } }),
    );
    expect(out).toEqual({ result: { x: "from b", y: 1, list: [1, 2] } });
  });

  it("works on the params when it has no dependency", async () => {
    const s = step({ ops: [{ op: "map", expr: "upper(@)" }] });
    const out = await executeTransform(s, context({ params: ["a", "b"] }));
    expect(out).toEqual({ result: ["A", "B"] });
  });

  it("uses a single explicit input with its JSON type", async () => {
    const s = step({
      deps: ["a"],
      ancestors: ["a", "b"],
      inputs: [{ t: "expr", e: "step.b.items" }],
      ops: [{ op: "filter", expr: "ok" }],
    });
    const out = await executeTransform(
      s,
      context({
        step: {
          a: "ignored",
          b: {
            items: [
              { ok: true, n: 1 },
              { ok: false, n: 2 },
            ],
          },
        },
      }),
    );
    expect(out).toEqual({ result: [{ ok: true, n: 1 }] });
  });

  it("deep-merges several explicit inputs left to right", async () => {
    const s = step({
      inputs: [
        { t: "expr", e: "params.defaults" },
        { t: "expr", e: "params.overrides" },
      ],
    });
    const out = await executeTransform(
      s,
      context({ params: { defaults: { color: "red", size: 1 }, overrides: { size: 2 } } }),
    );
    expect(out).toEqual({ result: { color: "red", size: 2 } });
  });

  it("reads a skipped dependency as its skip object", async () => {
    const skipped = { skipped: true, reason: "condition_false" };
    const s = step({ deps: ["maybe"], ancestors: ["maybe"] });
    expect(await executeTransform(s, context({ step: { maybe: skipped } }))).toEqual({ result: skipped });
  });

  it("passes a result that matches output.schema", async () => {
    const s = step({
      outputSchema: { type: "array", items: { type: "string" } },
      ops: [{ op: "map", expr: "n" }],
    });
    const out = await executeTransform(s, context({ params: [{ n: "x" }] }));
    expect(out).toEqual({ result: ["x"] });
  });

  it("fails with output_schema_mismatch naming the offending path", async () => {
    const s = step({
      outputSchema: { type: "array", items: { type: "string" } },
      ops: [{ op: "map", expr: "n" }],
    });
    const err = await executeTransform(s, context({ params: [{ n: "x" }, { n: 5 }] })).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(StepError);
    expect((err as StepError).code).toBe("output_schema_mismatch");
    expect((err as StepError).message).toContain("/1");
  });

  it("fails with expression_error when an op cannot be evaluated", async () => {
    const s = step({ ops: [{ op: "map", expr: "abs(@)" }] });
    const err = await executeTransform(s, context({ params: ["text"] })).catch((e: unknown) => e);
    expect((err as StepError).code).toBe("expression_error");
  });
});
