/**
 * `{{ }}` substitution as workflow authors see it (docs/file-format.md): a lone expression keeps its
 * JSON type, mixed text becomes a string, missing values are null (or empty in text), webhook
 * query parts are percent-encoded, and objects and arrays are rendered deeply.
 */
import { describe, expect, it } from "vitest";
import type { Template } from "../../src/bundle.ts";
import { render } from "../../src/engine/substitute.ts";
import type { EvalScope } from "../../src/engine/types.ts";
import { StepError } from "../../src/engine/types.ts";

const scope: EvalScope = {
  params: { name: "Ada", count: 3, tags: ["x", "y"], query: "a&b=c d", flag: false, nothing: null },
  env: { REGION: "eu-west" },
  step: { parse: { category: "billing", score: 0.5 }, "post-result": { status: 201 } },
};

const expr = (e: string): Template => ({ t: "expr", e });

describe("render", () => {
  it("returns a literal as is", () => {
    expect(render({ t: "lit", v: { a: [1, "{{ not parsed }}"] } }, scope)).toEqual({
      a: [1, "{{ not parsed }}"],
    });
  });

  it("keeps the number type of a lone expression", () => {
    expect(render(expr("params.count"), scope)).toBe(3);
  });

  it("keeps the array type of a lone expression", () => {
    expect(render(expr("params.tags"), scope)).toEqual(["x", "y"]);
  });

  it("keeps false as false", () => {
    expect(render(expr("params.flag"), scope)).toBe(false);
  });

  it("gives null for a missing value in a lone expression", () => {
    expect(render(expr("params.absent"), scope)).toBeNull();
  });

  it("reads env and step outputs, including quoted hyphenated ids", () => {
    expect(render(expr("env.REGION"), scope)).toBe("eu-west");
    expect(render(expr('step."post-result".status'), scope)).toBe(201);
  });

  it("builds a string from text mixed with expressions", () => {
    const t: Template = {
      t: "concat",
      parts: ["Hello ", { e: "params.name" }, ", you are in ", { e: "env.REGION" }],
    };
    expect(render(t, scope)).toBe("Hello Ada, you are in eu-west");
  });

  it("writes null and missing values as empty text", () => {
    const t: Template = {
      t: "concat",
      parts: ["[", { e: "params.nothing" }, "|", { e: "params.absent" }, "]"],
    };
    expect(render(t, scope)).toBe("[|]");
  });

  it("writes numbers, booleans, arrays and objects in text as compact JSON", () => {
    const t: Template = {
      t: "concat",
      parts: [
        { e: "params.count" },
        " ",
        { e: "params.flag" },
        " ",
        { e: "params.tags" },
        " ",
        { e: "step.parse" },
      ],
    };
    expect(render(t, scope)).toBe('3 false ["x","y"] {"category":"billing","score":0.5}');
  });

  it("percent-encodes parts marked encode and leaves the others as they are", () => {
    const t: Template = {
      t: "concat",
      parts: ["https://", { e: "env.REGION" }, ".example/a?q=", { e: "params.query", encode: true }],
    };
    expect(render(t, scope)).toBe("https://eu-west.example/a?q=a%26b%3Dc%20d");
  });

  it("renders objects and arrays deeply", () => {
    const t: Template = {
      t: "obj",
      entries: [
        ["who", expr("params.name")],
        ["list", { t: "arr", items: [expr("params.count"), { t: "lit", v: "fixed" }] }],
        ["nested", { t: "obj", entries: [["cat", expr("step.parse.category")]] }],
      ],
    };
    expect(render(t, scope)).toEqual({ who: "Ada", list: [3, "fixed"], nested: { cat: "billing" } });
  });

  it("does not let an expression see anything but params, env and step", () => {
    const withExtra = { ...scope, secretField: "x" } as EvalScope;
    expect(render(expr("secretField"), withExtra)).toBeNull();
  });

  it("fails with expression_error when an expression cannot be evaluated", () => {
    expect(() => render(expr("abs(params.name)"), scope)).toThrow(StepError);
  });
});
