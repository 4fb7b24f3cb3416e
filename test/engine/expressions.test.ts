/**
 * What workflow authors see from expressions beyond the compliance suite: the `{params, env,
 * step}` context with quoted hyphenated ids, missing values as null, JMESPath truthiness for
 * conditions, and one error code for anything that cannot be evaluated.
 */
import { describe, expect, it } from "vitest";
import { evaluate, isTruthy } from "../../src/engine/expressions.ts";
import { StepError } from "../../src/engine/types.ts";

const context = {
  params: { user: { name: "Ada" }, tags: ["a", "b"] },
  env: { REGION: "eu" },
  step: { "post-result": { status: 201 }, parse: { category: "billing" } },
};

function errorOf(fn: () => unknown): StepError {
  try {
    fn();
  } catch (err) {
    if (err instanceof StepError) return err;
    throw err;
  }
  throw new Error("expected a StepError, nothing was thrown");
}

describe("evaluate", () => {
  it("reads a step output through a quoted hyphenated id", () => {
    expect(evaluate('step."post-result".status', context)).toBe(201);
  });

  it("compares against a raw string literal", () => {
    expect(evaluate("step.parse.category == 'billing'", context)).toBe(true);
  });

  it("gives null for a missing value", () => {
    expect(evaluate("params.user.email", context)).toBeNull();
  });

  it("keeps the JSON type of the selected value", () => {
    expect(evaluate("params.tags", context)).toEqual(["a", "b"]);
  });

  it("gives the same result when the same expression is evaluated twice on different data", () => {
    expect(evaluate("params.user.name", context)).toBe("Ada");
    expect(evaluate("params.user.name", { params: { user: { name: "Grace" } } })).toBe("Grace");
  });

  it("fails with expression_error naming the expression on a type error", () => {
    const err = errorOf(() => evaluate("abs(params.user)", context));
    expect(err.code).toBe("expression_error");
    expect(err.message).toContain("abs(params.user)");
  });

  it("fails with expression_error on text that is not JMESPath", () => {
    expect(errorOf(() => evaluate("params.[", context)).code).toBe("expression_error");
  });
});

describe("isTruthy", () => {
  it.each([false, null, "", [], {}])("treats %j as false", (v) => {
    expect(isTruthy(v)).toBe(false);
  });

  it.each([true, 0, -1, "false", " ", [null], { a: null }])("treats %j as true", (v) => {
    expect(isTruthy(v)).toBe(true);
  });
});
