/**
 * ktsu's agent files give `servers[].path` from the project root (`servers/wiki.server.yaml` in
 * `agents/triage.agent.yaml`); docs/agents-and-tools.md reads it relative to the agent file. A ktsu file brought over
 * unchanged gets an error that says what to write.
 */
import { afterAll, describe, it } from "vitest";
import { compileFiles, expectDiagnostic, GATEWAY, removeProjects } from "./temp-project.ts";

afterAll(removeProjects);

const AGENT = `name: a
model: economy
prompt:
  user: hi
servers:
  - name: wiki
    path: servers/wiki.server.yaml
    access: {allowlist: ["*"]}
`;

const WORKFLOW = `kind: workflow
name: t
params: {schema: {type: object}}
model_policy: {cost_budget_usd: 0.5}
pipeline:
  - id: ask
    agent: ./agents/a.agent.yaml
`;

describe("a ktsu server path (from the project root)", () => {
  it("is an error that names the path relative to the agent file", () => {
    const p = compileFiles({
      "gateway.yaml": GATEWAY,
      "servers/wiki.server.yaml": 'name: wiki\nurl: "https://mcp.example.com/mcp"\n',
      "agents/a.agent.yaml": AGENT,
      "t.workflow.yaml": WORKFLOW,
    });
    expectDiagnostic(
      p,
      "error",
      "agents/a.agent.yaml",
      7,
      11,
      /not found \(relative to this agent file\); ktsu reads it from the project root.*write `\.\.\/servers\/wiki\.server\.yaml`/,
    );
  });
});
