/**
 * What `npm run test:workflows` tells a user, against docs/workflow-tests.md: what a user
 * reads when a case fails, and how expectations and asserts treat secrets and failed runs.
 */
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { toolArguments } from "../../src/gateway/provider.ts";
import { compileFiles, expectDiagnostic, removeProjects, writeProject } from "../compiler/temp-project.ts";
import { FIXTURE, root, runTests } from "./helpers.ts";

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

describe("assert", () => {
  it("masks a secret written in an assert, as every other expectation is masked; reads requests.<hyphenated id>", async () => {
    const dir = project(`kind: test
workflow: team
cases:
  - name: the header carries the token
    env: { CHAT_TOKEN: chat-token-4711 }
    mocks:
      summarize: { output: { summary: short } }
      post-greeting: { status: 200 }
    expect:
      assert:
        - "requests.\\"post-greeting\\"[0].headers.authorization == 'Bearer chat-token-4711'"
        - "env.CHAT_TOKEN == 'chat-token-4711'"
        - "requests.post-greeting[0].url == 'https://chat.example/hook'"
        - "step.post-greeting.status == \`200\`"
`);
    const { summary, out } = await runTests(dir);
    expect(out).toContain("✓ the header carries the token");
    expect(summary).toMatchObject({ passed: 1, failed: 0 });
    expect(out).not.toContain("chat-token-4711");
  });

  it("prints both sides of the comparison that made an assert false", async () => {
    const dir = project(`kind: test
workflow: team
cases:
  - name: wrong first name
    mocks:
      summarize: { output: { summary: short } }
      post-greeting: { status: 200 }
    expect:
      assert:
        - "step.names.result[0] == 'Lin'"
        - "length(step.names.result) == \`2\` && step.summarize.summary == 'long'"
`);
    const file = join(dir, "tests/team.test.yaml");
    const { out } = await runTests(dir);
    const lines = out.split("\n");
    expect(lines).toContain(
      `    ${file}:10:11: assert \`step.names.result[0] == 'Lin'\` is false: left "Ada", right "Lin"`,
    );
    expect(lines).toContain(
      `    ${file}:11:11: assert \`length(step.names.result) == \`2\` && step.summarize.summary == 'long'\` is false: left "short", right "long"`,
    );
  });
});

describe("a case without expect", () => {
  it("expects the run to complete", async () => {
    const dir = project(`kind: test
workflow: team
cases:
  - name: runs through
    mocks:
      summarize: { output: { summary: short } }
      post-greeting: { status: 200 }
  - name: runs into a failing webhook
    mocks:
      summarize: { output: { summary: short } }
      post-greeting: { status: 404 }
  - name: expects the failure
    mocks:
      summarize: { output: { summary: short } }
      post-greeting: { status: 404 }
    expect: { status: failed }
`);
    const { summary, out } = await runTests(dir);
    expect(summary).toMatchObject({ cases: 3, passed: 2, failed: 1 });
    expect(out).toContain("✓ runs through");
    expect(out).toContain("✓ expects the failure");
    expect(out).toMatch(
      new RegExp(
        `✗ runs into a failing webhook \\(\\d+ ms\\)\\n {4}${join(dir, "tests/team.test.yaml")}:8:5: the run is failed \\(webhook_failed at \`post-greeting\`: .*\\); a case without \`expect\` expects it to complete`,
      ),
    );
  });
});

describe("the CLI's paths", () => {
  it("reads a relative path from where `npm run test:workflows` was typed, not from the package root", () => {
    const r = spawnSync(
      join(root, "node_modules/.bin/node"),
      [join(root, "scripts/test-workflows.ts"), "tests/edge.test.yaml", "agents"],
      {
        cwd: root,
        encoding: "utf8",
        env: { ...process.env, npm_lifecycle_event: "test:workflows", INIT_CWD: FIXTURE },
      },
    );
    expect(r.stdout).toContain("test/fixtures/wftest-project/tests/edge.test.yaml (");
    expect(r.stdout).toContain("test/fixtures/wftest-project/agents: no *.test.yaml file here");
    expect(r.stdout).not.toContain("not found");
    expect(r.status).toBe(1);
  });

  it("prints the warnings of the test files it runs, not of the others", async () => {
    const dir = project(`kind: test
workflow: team
cases:
  - name: runs through
    mocks:
      summarize: { output: { summary: short } }
      post-greeting: { status: 200 }
`);
    writeFileSync(
      join(dir, "tests/other.test.yaml"),
      `kind: test
workflow: team
cases:
  - name: reads an env var nobody declared
    env: { NOT_DECLARED: x }
    mocks:
      summarize: { output: { summary: short } }
      post-greeting: { status: 200 }
`,
    );
    const all = await runTests(dir);
    expect(all.out).toContain("other.test.yaml:5:12: warning: `NOT_DECLARED`");
    const one = await runTests(dir, [join(dir, "tests/team.test.yaml")]);
    expect(one.summary).toMatchObject({ files: 1, passed: 1, errors: 0 });
    expect(one.out).not.toContain("warning");
  });
});

describe("masking", () => {
  it("prints no part of a secret that a reply which is not JSON starts with", async () => {
    const dir = project(`kind: test
workflow: team
cases:
  - name: the model echoes the token
    env: { CHAT_TOKEN: chat-token-4711 }
    mocks:
      summarize: { reply: '{"summary": chat-token-4711}' }
      post-greeting: { status: 200 }
    expect: { status: complete }
`);
    const { out } = await runTests(dir);
    expect(out).toMatch(
      /output_schema_mismatch at `summarize`: .*the reply is not JSON \(Unexpected token 'c'\)/,
    );
    expect(out).not.toMatch(/chat-/);
  });

  it("quotes no part of tool-call arguments that are not JSON", () => {
    const parsed = toolArguments('{"token": sk-live-0123456789}');
    expect(parsed.arguments).toEqual({});
    expect(parsed.invalidArguments).toBe("not JSON (Unexpected token 's')");
  });
});
