/**
 * Expression and template handling the user relies on: hyphenated ids written naturally,
 * literals left alone, `{{ }}` found correctly even around JMESPath braces and strings, and
 * references read from the syntax tree rather than the text.
 */
import { describe, expect, it } from "vitest";
import { checkExpression, quoteStepIds, rootPaths } from "../../src/compiler/expressions.ts";
import { splitTemplate } from "../../src/compiler/templates.ts";

describe("step id quoting", () => {
  it("quotes hyphenated ids after step.", () => {
    expect(quoteStepIds("step.post-result.status == `200`", ["post-result"])).toBe(
      'step."post-result".status == `200`',
    );
  });

  it("prefers the longest id", () => {
    expect(quoteStepIds("step.a-b-c.x", ["a-b", "a-b-c"])).toBe('step."a-b-c".x');
  });

  it("does not touch ids inside string or backtick literals", () => {
    const e = "step.a-b.x == 'step.a-b' || `\"step.a-b\"` == step.a-b.y";
    expect(quoteStepIds(e, ["a-b"])).toBe('step."a-b".x == \'step.a-b\' || `"step.a-b"` == step."a-b".y');
  });

  it("leaves a longer name that merely starts with an id alone", () => {
    expect(quoteStepIds("step.a-bc.x", ["a-b"])).toBe("step.a-bc.x");
  });

  it("leaves plain identifiers unquoted", () => {
    expect(quoteStepIds("step.fetch.x", ["fetch"])).toBe("step.fetch.x");
  });
});

describe("references", () => {
  const paths = (e: string) => {
    const c = checkExpression(e, []);
    if (!c.ok) throw new Error(c.error);
    return rootPaths(c.ast);
  };

  it("reads step and field from a plain chain", () => {
    expect(paths('step."post-result".body.id')).toEqual([["step", "post-result", "body", "id"]]);
  });

  it("stops the static path at an index", () => {
    expect(paths("step.a.items[0].id")).toEqual([["step", "a", "items"]]);
  });

  it("ignores names inside string literals", () => {
    expect(paths("'step.x' == params.y")).toEqual([["params", "y"]]);
  });

  it("does not take fields of projected items for root reads", () => {
    expect(paths("params.items[?step == 'x'].name")).toEqual([["params", "items"]]);
  });

  it("finds reads inside function arguments and multiselects", () => {
    expect(paths("{n: length(step.a.result), e: env.X}")).toEqual([
      ["step", "a", "result"],
      ["env", "X"],
    ]);
  });
});

describe("template splitting", () => {
  it("splits text and expressions", () => {
    expect(splitTemplate("Hi {{ params.name }}!")).toEqual([
      { text: "Hi " },
      { expr: "params.name" },
      { text: "!" },
    ]);
  });

  it("keeps a multiselect hash with nested braces in one expression", () => {
    expect(splitTemplate("{{ {a: {b: params.c}} }}")).toEqual([{ expr: "{a: {b: params.c}}" }]);
  });

  it("keeps `}}` inside a string literal in the expression", () => {
    expect(splitTemplate("{{ join('}}', params.x) }}")).toEqual([{ expr: "join('}}', params.x)" }]);
  });

  it("rejects an unclosed {{", () => {
    expect(() => splitTemplate("Hi {{ params.name")).toThrow("`{{` without a closing `}}`");
  });

  it("rejects an empty {{ }}", () => {
    expect(() => splitTemplate("a {{ }} b")).toThrow("empty `{{ }}`");
  });
});

describe("functions", () => {
  it("refuses a function JMESPath does not have, wherever it is called, naming the closest one", () => {
    for (const expr of [
      "multiply(a, `2`)",
      "{n: a, twice: multiply(a, `2`)}",
      "items[?contians(name, 'x')]",
    ]) {
      const c = checkExpression(expr, []);
      expect(c.ok).toBe(false);
      if (!c.ok) expect(c.error).toMatch(/^unknown function (multiply|contians)\(\)/);
    }
    const typo = checkExpression("lenght(a)", []);
    expect(!typo.ok && typo.error).toBe("unknown function lenght(); did you mean `length`?");
  });

  it("accepts every function JMESPath has, and a function's name inside a literal", () => {
    for (const expr of [
      "length(a)",
      "sum([a, b])",
      "contains(a, 'multiply(x)')",
      '`{"type": "Function", "name": "nope"}`',
    ])
      expect(checkExpression(expr, []).ok).toBe(true);
  });
});
