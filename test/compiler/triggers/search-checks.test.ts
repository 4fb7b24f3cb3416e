/**
 * Build checks of `search:` (docs/http-api.md, "Search keys"): at most 4 keys, named like fields,
 * each a template over `params` and `request` only, in invocable workflows.
 */
import { afterAll, describe, expect, it } from "vitest";
import { compileFiles, expectDiagnostic, removeProjects } from "../temp-project.ts";

afterAll(removeProjects);

/** A root workflow with `search:` lines from line 7 on. */
const wf = (search: string) => `kind: workflow
name: t
params:
  schema: {type: object, properties: {c: {type: string}}}
env: [{name: S, secret: true}]
search:
${search}pipeline:
  - id: a
    transform: {ops: []}
`;

describe("search", () => {
  it("compiles each key to a template over params and request", () => {
    const p = compileFiles({ "t.workflow.yaml": wf('  customer: "{{ params.c }}"\n  kind: fixed\n') });
    expect(p.errors).toEqual([]);
    expect(Object.keys(p.result.bundle?.workflows["t.workflow.yaml"]?.search ?? {})).toEqual([
      "customer",
      "kind",
    ]);
  });

  it("refuses a fifth key, at it", () => {
    const p = compileFiles({ "t.workflow.yaml": wf("  a: x\n  b: x\n  c: x\n  d: x\n  e: x\n") });
    expectDiagnostic(
      p,
      "error",
      "t.workflow.yaml",
      11,
      3,
      /^`search` has 5 keys; at most 4 are kept per run$/,
    );
  });

  it("refuses a template reading anything but params and request", () => {
    const p = compileFiles({
      "t.workflow.yaml": wf('  s: "{{ env.S }}"\n  o: "{{ step.a.result }}"\n'),
    });
    expectDiagnostic(
      p,
      "error",
      "t.workflow.yaml",
      7,
      6,
      /`search.s` may read only `params` and `request`, not `env`/,
    );
    expectDiagnostic(
      p,
      "error",
      "t.workflow.yaml",
      8,
      6,
      /`search.o` may read only `params` and `request`, not `step`/,
    );
  });

  it("refuses a key that is not a field name", () => {
    const p = compileFiles({ "t.workflow.yaml": wf("  Customer-Id: x\n") });
    expectDiagnostic(
      p,
      "error",
      "t.workflow.yaml",
      7,
      3,
      /search key `Customer-Id` must be lower-case letters/,
    );
  });
});
