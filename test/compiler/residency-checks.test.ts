/**
 * Build checks of `residency` (docs/file-format.md, docs/operations.md "Jurisdictions"): one of the
 * four jurisdictions on a root workflow; an unknown value, or one on a file used only as a
 * sub-workflow (which runs in its caller's jurisdiction), is an error at its position.
 */
import { afterAll, describe, expect, it } from "vitest";
import { compileFiles, removeProjects } from "./temp-project.ts";

afterAll(removeProjects);

const T = "t.workflow.yaml";
const root = (residency: string) => `kind: workflow
name: t
residency: ${residency}
params: {schema: {type: object}}
pipeline:
  - id: x
    transform: {ops: []}
`;
const where = (p: ReturnType<typeof compileFiles>) =>
  p.errors.map((e) => `${e.file.split("/").pop()}:${e.line}:${e.col}: ${e.message}`);

describe("residency", () => {
  it("compiles each jurisdiction on a root workflow into the bundle", () => {
    for (const r of ["eu", "us", "fedramp", "fedramp-high"]) {
      const p = compileFiles({ [T]: root(r) });
      expect(p.errors, r).toEqual([]);
      expect(p.result.bundle?.workflows[T]?.residency, r).toBe(r);
    }
  });

  it("leaves a workflow without residency in no jurisdiction", () => {
    const p = compileFiles({ [T]: root("eu").replace("residency: eu\n", "") });
    expect(p.errors).toEqual([]);
    expect(p.result.bundle?.workflows[T]).not.toHaveProperty("residency");
  });

  it("refuses an unknown jurisdiction at its value, naming the four and the closest", () => {
    const p = compileFiles({ [T]: root("europe") });
    expect(where(p)).toEqual([
      expect.stringMatching(/^t\.workflow\.yaml:3:12: .*`eu`, `us`, `fedramp`, `fedramp-high`/),
    ]);
  });

  it("refuses residency on a file used only as a sub-workflow: it runs in its caller's jurisdiction", () => {
    const p = compileFiles({
      [T]: `kind: workflow
name: t
residency: eu
params: {schema: {type: object}}
pipeline:
  - id: call
    workflow: ./child.yaml
`,
      "child.yaml": root("us").replace("name: t", "name: child"),
    });
    expect(where(p)).toEqual([
      "child.yaml:3:1: `residency` is for invocable workflows (a sub-workflow runs in its caller's run, in the caller's jurisdiction)",
    ]);
  });
});
