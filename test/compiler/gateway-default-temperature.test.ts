/** ktsu's `default_temperature` on a model group: compiled into the bundle, checked for range. */
import { afterAll, describe, expect, it } from "vitest";
import { compileFiles, expectDiagnostic, HEAD, removeProjects } from "./temp-project.ts";

afterAll(removeProjects);

const T = "t.workflow.yaml";
const gateway = (temperature: string) =>
  [
    "env:",
    "  - {name: OPENAI_API_KEY, secret: true}",
    "providers:",
    "  - name: openai",
    "    type: openai",
    '    config: {api_key: "{{ env.OPENAI_API_KEY }}"}',
    "model_groups:",
    "  - name: economy",
    "    models: [openai/gpt-4o-mini]",
    `    default_temperature: ${temperature}`,
    "",
  ].join("\n");
const workflow = `${HEAD}  - id: a\n    transform: {ops: []}\n`;

describe("default_temperature (ktsu)", () => {
  it("is accepted and carried into the bundle", () => {
    const p = compileFiles({ "gateway.yaml": gateway("0.2"), [T]: workflow });
    expect(p.errors).toEqual([]);
    expect(p.result.bundle?.gateway.groups[0]?.defaultTemperature).toBe(0.2);
  });

  it("is rejected outside 0..2, at the value", () => {
    const p = compileFiles({ "gateway.yaml": gateway("3"), [T]: workflow });
    expectDiagnostic(p, "error", "gateway.yaml", 10, 26, /default_temperature.*0\.\.2/);
  });
});
