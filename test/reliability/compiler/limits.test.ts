/**
 * The compile-time limits of docs/http-api.md: 200 steps per workflow and sub-workflow nesting 8
 * levels deep. Each is tested at the limit (compiles) and one past it (a positioned error that
 * names the limit). The runtime limits are in test/reliability/limits.test.ts.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { type CompileResult, compileProject } from "../../../src/compiler/index.ts";

const made: string[] = [];
afterAll(() => {
  for (const d of made.splice(0)) rmSync(d, { recursive: true, force: true });
});

function compile(files: Record<string, string>): { dir: string; result: CompileResult; errors: string[] } {
  const dir = mkdtempSync(join(tmpdir(), "wf-limits-"));
  made.push(dir);
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, name)), { recursive: true });
    writeFileSync(join(dir, name), text);
  }
  const result = compileProject(dir);
  const errors = result.diagnostics
    .filter((d) => d.severity === "error")
    .map((d) => d.text.slice(dir.length + 1));
  return { dir, result, errors };
}

function pipelineOf(n: number): string {
  const steps = Array.from({ length: n }, (_, i) => `  - id: s${i}\n    transform:\n      ops: []\n`);
  return `kind: workflow\nname: long\nparams:\n  schema: { type: object }\npipeline:\n${steps.join("")}`;
}

describe("steps per workflow: 200", () => {
  it("compiles a pipeline of exactly 200 steps", () => {
    const { result, errors } = compile({ "long.workflow.yaml": pipelineOf(200) });
    expect(errors).toEqual([]);
    expect(result.bundle?.workflows["long.workflow.yaml"]?.steps).toHaveLength(200);
  });

  it("rejects 201 steps at the pipeline key, naming the limit", () => {
    const { result, errors } = compile({ "long.workflow.yaml": pipelineOf(201) });
    expect(result.bundle).toBeNull();
    expect(errors).toEqual([
      "long.workflow.yaml:5:1: the pipeline has 201 steps; the limit is 200 per workflow (split it into sub-workflows)",
    ]);
  });
});

/** root.workflow.yaml -> subs/l1.yaml -> ... -> subs/l{levels}.yaml */
function chainOf(levels: number): Record<string, string> {
  const step = (target: string) => `pipeline:\n  - id: down\n    workflow: ${target}\n    input: {}\n`;
  const leaf = "pipeline:\n  - id: leaf\n    transform:\n      ops: []\n";
  const head = (name: string) => `kind: workflow\nname: ${name}\nparams:\n  schema: { type: object }\n`;
  const files: Record<string, string> = {
    "root.workflow.yaml": head("root") + (levels > 0 ? step("./subs/l1.yaml") : leaf),
  };
  for (let i = 1; i <= levels; i++) {
    files[`subs/l${i}.yaml`] = head(`l${i}`) + (i < levels ? step(`./l${i + 1}.yaml`) : leaf);
  }
  return files;
}

describe("sub-workflow depth: 8", () => {
  it("compiles a chain of 8 nested sub-workflows", () => {
    const { result, errors } = compile(chainOf(8));
    expect(errors).toEqual([]);
    expect(Object.keys(result.bundle?.workflows ?? {})).toHaveLength(9);
  });

  it("rejects a 9th level at the workflow step that goes too deep, naming the chain", () => {
    const { result, errors } = compile(chainOf(9));
    expect(result.bundle).toBeNull();
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(
      /^subs\/l8\.yaml:7:15: sub-workflow nesting deeper than 8 levels: `root\.workflow\.yaml` -> `subs\/l1\.yaml` -> .* -> `subs\/l9\.yaml`$/,
    );
  });
});
