/**
 * The `workflow` step kind: runs a sub-workflow (resolved by the project graph) with a templated
 * `input`; `webhooks: execute` lets its webhook steps fire.
 */
import type { StepKindCompiler } from "./step-base.ts";
import { stepPath } from "./step-base.ts";

export const workflowStep: StepKindCompiler<"workflow"> = {
  compile(i, s, base, c) {
    return {
      ...base,
      kind: "workflow",
      workflow: c.subWorkflowKeys.get(i) ?? "",
      input: s.input === undefined ? { t: "lit", v: {} } : c.template(i, s.input, stepPath(i, "input")),
      webhooks: s.webhooks === "execute" ? "execute" : "suppress",
    };
  },
};
