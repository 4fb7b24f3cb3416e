/**
 * Findings of a black-box audit of `npm run test:workflows` against SPEC section 11: what a user
 * reads when a case fails, and how expectations and asserts treat secrets and failed runs.
 */
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { compileFiles, expectDiagnostic, removeProjects, writeProject } from "../compiler/temp-project.ts";
import { runTests } from "./helpers.ts";

afterAll(removeProjects);

const GATEWAY = `providers:
  - { name: openai, type: openai, config: { base_url: "https://api.openai.com/v1", api_key: "{{ env.OPENAI_API_KEY }}" } }
model_groups:
  - name: economy
    models: [openai/gpt-4o-mini]
    pricing: [{ model: gpt-4o-mini, input_per_million: 0.15, output_per_million: 0.6 }]
env:
  - { name: OPENAI_API_KEY, secret: true }
`;

const AGENT = `name: summarizer
description: Summarises a list of names.
model: economy
params: { schema: { type: object } }
prompt: { system: Summarise. }
output: { schema: { type: object, required: [summary], properties: { summary: { type: string } } } }
`;

const TEAM = `kind: workflow
name: team
version: 1.0.0
params: { schema: { type: object } }
env:
  - { name: CHAT_TOKEN, secret: true }
pipeline:
  - id: names
    transform:
      inputs: [{ from: "{{ ['Ada', 'Lin'] }}" }]
  - id: summarize
    agent: ./agents/summarizer.agent.yaml
  - id: post-greeting
    webhook:
      url: "https://chat.example/hook"
      headers: { Authorization: "Bearer {{ env.CHAT_TOKEN }}" }
      body: { text: "Hello {{ join(', ', step.names.result) }}" }
model_policy: { cost_budget_usd: 0.05 }
`;

function project(tests: string): string {
  return writeProject({
    "gateway.yaml": GATEWAY,
    "agents/summarizer.agent.yaml": AGENT,
    "team.workflow.yaml": TEAM,
    "tests/team.test.yaml": tests,
  });
}

describe("failure messages", () => {
  it("says `got null` once when a run that completed is expected to fail with a code", async () => {
    const dir = project(`kind: test
workflow: team
cases:
  - name: expects an error
    mocks:
      summarize: { output: { summary: short } }
      post-greeting: { status: 200 }
    expect:
      error: webhook_failed
`);
    const { out } = await runTests(dir);
    expect(out.split("\n")).toContain(
      `    ${join(dir, "tests/team.test.yaml")}:9:14: expect.error: expected "webhook_failed", got null`,
    );
  });

  it('says "an agent step" for a path under an agent step', () => {
    const p = compileFiles({
      "gateway.yaml": GATEWAY,
      "agents/summarizer.agent.yaml": AGENT,
      "team.workflow.yaml": TEAM,
      "tests/team.test.yaml": `kind: test
workflow: team
cases:
  - name: x
    mocks:
      summarize/inner: { status: 200 }
`,
    });
    expectDiagnostic(
      p,
      "error",
      "tests/team.test.yaml",
      6,
      7,
      /^mocks: `summarize` is an agent step: it has no steps inside/,
    );
  });
});
