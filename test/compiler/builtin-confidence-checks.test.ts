/**
 * `confidence_threshold` on a built-in agent: `core/chat` answers text and can never report
 * `ktsu_confidence`, so the build warns where the threshold is set; `core/classify` is asked for
 * it (src/steps/agent.ts) and builds without a warning about it.
 */
import { afterAll, describe, expect, it } from "vitest";
import { compileFiles, expectDiagnostic, GATEWAY, HEAD, removeProjects } from "./temp-project.ts";

afterAll(removeProjects);

const T = "t.workflow.yaml";
const withBudget = HEAD.replace("pipeline:\n", "model_policy: {cost_budget_usd: 1}\npipeline:\n");

describe("confidence_threshold on a built-in agent", () => {
  it("warns at the threshold on core/chat (the step would always fail low_confidence)", () => {
    const p = compileFiles({
      "gateway.yaml": GATEWAY,
      [T]: `${withBudget}  - id: talk
    agent: core/chat@1.0.0
    confidence_threshold: 0.8
    params: {prompt: "hi"}
`,
    });
    expect(p.errors.map((d) => d.text)).toEqual([]);
    expectDiagnostic(p, "warning", T, 13, 27, /core\/chat.*never reports `ktsu_confidence`.*low_confidence/);
  });

  it("does not warn on core/classify, which is asked for its confidence", () => {
    const p = compileFiles({
      "gateway.yaml": GATEWAY,
      [T]: `${withBudget}  - id: sort
    agent: core/classify@1.0.0
    confidence_threshold: 0.8
    params: {text: "hi", labels: [a, b]}
`,
    });
    expect(p.errors.map((d) => d.text)).toEqual([]);
    expect(p.warnings.map((d) => d.message).filter((m) => m.includes("ktsu_confidence"))).toEqual([]);
  });
});
