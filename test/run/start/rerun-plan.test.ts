/**
 * Which steps a re-run reuses (src/run/start/rerun-plan.ts, docs/http-api.md), over compiled definitions and the
 * records an old run left: what did not complete runs again with everything downstream of it,
 * `from` adds a step and its dependents, a sub-workflow step that runs again keeps its completed
 * children, and a step the current definition changed is never reused.
 */
import { afterAll, describe, expect, it } from "vitest";
import type { Bundle } from "../../../src/bundle.ts";
import { pendingRecord } from "../../../src/engine/step-records.ts";
import type { StepRecord } from "../../../src/engine/types.ts";
import { planRerun } from "../../../src/run/start/rerun-plan.ts";
import { compileFiles, removeProjects } from "../../compiler/temp-project.ts";

afterAll(removeProjects);

const CHILD = `kind: workflow
name: child
params:
  schema: { type: object }
pipeline:
  - id: c1
    webhook: { url: "https://a.example.com/c1" }
  - id: c2
    depends_on: [c1]
    webhook: { url: "https://a.example.com/c2" }
`;

function parent(afterKind: "webhook" | "transform" = "webhook"): string {
  const after =
    afterKind === "webhook"
      ? `webhook: { url: "https://a.example.com/after" }`
      : `transform: { inputs: [{ from: "{{ step.sub }}" }] }`;
  return `kind: workflow
name: parent
params:
  schema: { type: object }
pipeline:
  - id: before
    webhook: { url: "https://a.example.com/before" }
  - id: maybe
    condition: "params.never == \`true\`"
    webhook: { url: "https://a.example.com/maybe" }
  - id: sub
    depends_on: [before]
    workflow: ./child.workflow.yaml
    input: {}
  - id: after
    depends_on: [sub]
    ${after}
`;
}

function compile(afterKind: "webhook" | "transform" = "webhook"): Bundle {
  const p = compileFiles({ "parent.workflow.yaml": parent(afterKind), "child.workflow.yaml": CHILD });
  if (!p.result.bundle) throw new Error(p.errors.map((e) => e.message).join("\n"));
  return p.result.bundle;
}

function rec(id: string, status: StepRecord["status"], output: StepRecord["output"] = null): StepRecord {
  return { ...pendingRecord(id), status, output };
}

/** An old run that completed. */
function completed(): Map<string, StepRecord> {
  return new Map([
    ["before", rec("before", "complete")],
    ["maybe", rec("maybe", "skipped", { skipped: true, reason: "condition_false" })],
    ["sub", rec("sub", "complete")],
    ["sub/c1", rec("c1", "complete")],
    ["sub/c2", rec("c2", "complete")],
    ["after", rec("after", "complete")],
  ]);
}

/** An old run that failed in the child's second step. */
function failedInChild(): Map<string, StepRecord> {
  return new Map([
    ["before", rec("before", "complete", { ok: 1 })],
    ["maybe", rec("maybe", "skipped", { skipped: true, reason: "condition_false" })],
    ["sub", rec("sub", "failed")],
    ["sub/c1", rec("c1", "complete", { ok: 2 })],
    ["sub/c2", rec("c2", "failed")],
    ["after", rec("after", "skipped", { skipped: true, reason: "run_failed" })],
  ]);
}

function reusedPaths(def: Bundle, records: Map<string, StepRecord>, from: string | null, now = def) {
  const key = def.invocable.parent as string;
  const plan = planRerun({ runId: "old", def, key, records }, now, now.invocable.parent as string, from);
  return plan.outcome === "planned" ? plan.reused.map(([p]) => p).sort() : plan.outcome;
}

describe("re-run plan", () => {
  it("reuses completed steps and steps skipped by their condition, and a failed sub-workflow's completed children", () => {
    expect(reusedPaths(compile(), failedInChild(), null)).toEqual(["before", "maybe", "sub/c1"]);
  });

  it("marks each reused record with the run it executed in, keeping an earlier run's name", () => {
    const records = failedInChild();
    records.set("before", { ...rec("before", "complete"), reused_from: "first" });
    const def = compile();
    const plan = planRerun(
      { runId: "old", def, key: def.invocable.parent as string, records },
      def,
      def.invocable.parent as string,
      null,
    );
    if (plan.outcome !== "planned") throw new Error(plan.outcome);
    const by = new Map(plan.reused);
    expect(by.get("before")?.reused_from).toBe("first");
    expect(by.get("sub/c1")?.reused_from).toBe("old");
  });

  it("with from inside a sub-workflow, re-runs that child step and keeps its completed siblings", () => {
    const records = completed();
    expect(reusedPaths(compile(), records, "sub/c2")).toEqual(["before", "maybe", "sub/c1"]);
    // From the sub-workflow step itself: its whole child runs again.
    expect(reusedPaths(compile(), records, "sub")).toEqual(["before", "maybe"]);
    // From the first step: everything downstream of it too (a step without depends_on follows the one before it).
    expect(reusedPaths(compile(), records, "before")).toEqual([]);
  });

  it("answers unknown_step for a from that names no step, or a child of a step that is not a sub-workflow", () => {
    expect(reusedPaths(compile(), failedInChild(), "nope")).toBe("unknown_step");
    expect(reusedPaths(compile(), failedInChild(), "sub/zz")).toBe("unknown_step");
    expect(reusedPaths(compile(), failedInChild(), "before/x")).toBe("unknown_step");
  });

  it("on another definition reuses a completed step only where a step of the same id and kind exists", () => {
    const records = completed();
    // `after` is a transform now: it runs, the rest is kept.
    expect(reusedPaths(compile(), records, "after", compile("transform"))).toEqual([
      "before",
      "maybe",
      "sub",
      "sub/c1",
      "sub/c2",
    ]);
    const changed = new Map(records);
    expect(reusedPaths(compile("transform"), changed, null, compile())).toEqual([
      "before",
      "maybe",
      "sub",
      "sub/c1",
      "sub/c2",
    ]);
  });
});
