/**
 * What an expression can read of the run's scope (src/compiler/expression-reads.ts), the fact
 * behind "a secret never goes to a host the caller picks": static paths where the expression names
 * them, the whole scope wherever it could reach anything, never less than it reads.
 */
import { describe, expect, it } from "vitest";
import { rootReads } from "../../src/compiler/expression-reads.ts";
import { checkExpression } from "../../src/compiler/expressions.ts";

function reads(expr: string) {
  const c = checkExpression(expr, []);
  if (!c.ok) throw new Error(`${expr}: ${c.error}`);
  const r = rootReads(c.ast);
  return { paths: r.paths.map((p) => p.join(".")).sort(), whole: r.whole };
}

describe("what an expression reads", () => {
  it.each([
    ["params.url", ["params.url"]],
    ["env.TOKEN", ["env.TOKEN"]],
    ["step.fetch.body.items", ["step.fetch.body.items"]],
    ['step."post-result".body', ["step.post-result.body"]],
    ["params.items[0].url", ["params.items"]],
    ["params.items[*].url", ["params.items"]],
    ["params.items[?active].url", ["params.items"]],
    ["params.x[1:2]", ["params.x"]],
    ["params[]", ["params"]],
    ["@.params.url", ["params.url"]],
    ["$.params.url", ["params.url"]],
    ["env | TOKEN", ["env"]],
    ["env.* | [0]", ["env"]],
    ["env.[TOKEN]", ["env"]],
    ["values(env)", ["env"]],
    ["keys(env)", ["env"]],
    ["join('', [params.a, env.B])", ["env.B", "params.a"]],
    ["params.a || env.b", ["env.b", "params.a"]],
    ["params.a && env.b", ["env.b", "params.a"]],
    ["!env.A", ["env"]],
    ["-params.n", ["params.n"]],
    ["`1` + env.X", ["env.X"]],
    ["params.x ? env.A : step.b", ["env.A", "params.x", "step.b"]],
    ["{a: env.X, b: params.y}", ["env.X", "params.y"]],
    ["[params.a, env.B]", ["env.B", "params.a"]],
    ["params.a == env.b", ["env.b", "params.a"]],
    ["let $e = env in $e.X", ["env"]],
    ["sort_by(params.items, &name)", ["params.items"]],
    ["params.items[?url == $.env.X]", ["env.X", "params.items"]],
    ["params.items | [0].url", ["params.items"]],
    ["params.items | @", ["params.items"]],
    ["params[0].url", ["params"]],
    ["env[0].TOKEN", ["env"]],
    ["sort_by(params.items, &$.env.X)", ["env.X", "params.items"]],
    ["params.x.{a: $.env.X}", ["env.X", "params.x"]],
    ["params.x.[$.env.X]", ["env.X", "params.x"]],
    ["'literal'", []],
    ['`{"a": 1}`', []],
  ])("%s reads %j", (expr, paths) => {
    expect(reads(expr)).toEqual({ paths, whole: false });
  });

  it.each([
    "@",
    "$",
    "values(@)",
    "values(@)[0].url",
    "to_string(@)",
    "*.url",
    "[0]",
    "[*].url",
    "merge(@, `{}`)",
    "let $all = @ in $all.env",
    "params.items[?@ == $]",
  ])("%s can read the whole scope", (expr) => {
    expect(reads(expr).whole).toBe(true);
  });

  it("reads nothing of the scope on the right of a pipe or projection, but the root again through $", () => {
    expect(reads("params.items[*].env.TOKEN")).toEqual({ paths: ["params.items"], whole: false });
    expect(reads("params.items | env")).toEqual({ paths: ["params.items"], whole: false });
    expect(reads("params.items | $.env.X")).toEqual({ paths: ["env.X", "params.items"], whole: false });
  });

  it("counts a node it does not know as reading the whole scope", () => {
    expect(rootReads({ type: "SomethingNew", child: { type: "Field", name: "params" } })).toEqual({
      paths: [],
      whole: true,
    });
  });
});
