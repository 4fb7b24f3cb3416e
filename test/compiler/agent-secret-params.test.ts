/**
 * A secret handed to an agent param that goes to the model provider: a param the agent does not
 * mark `secret: true` (docs/agents-and-tools.md: secret params are for tool servers only), or any param of a
 * built-in agent. The build warns at the step's param; the build still succeeds.
 */
import { afterAll, describe, expect, it } from "vitest";
import { compileFiles, expectDiagnostic, GATEWAY, HEAD, removeProjects } from "./temp-project.ts";

afterAll(removeProjects);

const T = "t.workflow.yaml";
const A = "agents/a.agent.yaml";
const head = `${HEAD.replace("  - {name: TOKEN, secret: true}\n", "  - {name: TOKEN, secret: true}\n  - {name: API_KEY, secret: true}\n  - {name: REGION, secret: false}\n")}`;
const AGENT = `name: a
model: economy
params:
  schema:
    type: object
    properties:
      key: {type: string, secret: true}
      note: {type: string}
prompt:
  user: "{{ params.note }}"
`;
const budget = "model_policy: {cost_budget_usd: 1}\n";

function project(stepParams: string, agent = "./agents/a.agent.yaml") {
  return compileFiles({
    "gateway.yaml": GATEWAY,
    [A]: AGENT,
    [T]: `${head}  - id: ask\n    agent: ${agent}\n    params: ${stepParams}\n${budget}`,
  });
}

const leakWarnings = (p: ReturnType<typeof project>) =>
  p.warnings.filter((d) => d.message.includes("sends to the model provider"));

describe("secrets in agent params", () => {
  it("warns when a secret goes to a param the agent does not mark secret", () => {
    const p = project('{note: "key {{ env.API_KEY }}"}');
    expect(p.errors.map((d) => d.text)).toEqual([]);
    expectDiagnostic(
      p,
      "warning",
      T,
      14,
      20,
      /^step `ask`: param `note` carries secret `env\.API_KEY`, which agent `a` sends to the model provider .*mark `note` `secret: true`/,
    );
    expect(p.result.bundle).not.toBeNull();
  });

  it("warns for any param of a built-in agent", () => {
    const p = project('{prompt: "{{ env.API_KEY }}"}', "core/chat@1.0.0");
    expectDiagnostic(p, "warning", T, 14, 22, /`core\/chat` sends to the model provider.*every param/);
  });

  it("does not warn for a param marked secret, or for a non-secret env value", () => {
    expect(leakWarnings(project('{key: "{{ env.API_KEY }}", note: "{{ env.REGION }}"}'))).toEqual([]);
  });
});
