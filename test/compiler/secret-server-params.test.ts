/**
 * docs/agents-and-tools.md, ktsu's rule: a server param declared `secret: true` is fed only from agent
 * params marked `secret: true`. An unmarked agent param would reach the model (an agent without
 * `prompt.user` sends its params as JSON), so the build rejects it at the server ref's param.
 * A literal `notify.url` must be an absolute http(s) URL: anything else would never be sent.
 */
import { afterAll, describe, expect, it } from "vitest";
import { compileFiles, expectDiagnostic, GATEWAY, HEAD, removeProjects } from "./temp-project.ts";

afterAll(removeProjects);

const A = "agents/a.agent.yaml";
const SERVER = `name: s
url: "https://mcp.example.com/mcp"
auth:
  secret: "{{ params.tok }}"
params:
  tok: {secret: true}
  url: {default: x}
`;

function agent(tokenSchema: string, tok: string): string {
  return `name: a
model: economy
params:
  schema:
    type: object
    properties:
      token: ${tokenSchema}
      q: {type: string}
servers:
  - name: s
    path: ../servers/s.server.yaml
    params:
      tok: ${tok}
    access:
      allowlist: ["*"]
`;
}

const WORKFLOW = `${HEAD}  - id: ask
    agent: ./agents/a.agent.yaml
    params: {token: "{{ env.TOKEN }}", q: hi}
model_policy: {cost_budget_usd: 0.5}
`;

function build(agentText: string) {
  return compileFiles({
    "gateway.yaml": GATEWAY,
    "servers/s.server.yaml": SERVER,
    [A]: agentText,
    "t.workflow.yaml": WORKFLOW,
  });
}

describe("a secret server param", () => {
  it("fed from an agent param that is not secret: true is a build error at file:line:col", () => {
    const p = build(agent("{type: string}", '"{{ params.token }}"'));
    expect(p.result.bundle).toBeNull();
    expectDiagnostic(
      p,
      "error",
      A,
      13,
      12,
      /^`tok` is a secret param of server `s` but reads agent param `token`, which is not `secret: true`/,
    );
  });

  it("also when the param is read inside a longer template", () => {
    const p = build(agent("{type: string}", '"Bearer {{ params.token }}"'));
    expectDiagnostic(p, "error", A, 13, 12, /reads agent param `token`, which is not `secret: true`/);
  });

  it("fed from a secret: true agent param compiles", () => {
    const p = build(agent("{type: string, secret: true}", '"{{ params.token }}"'));
    expect(p.errors).toEqual([]);
  });
});

describe("a param the agent does not declare", () => {
  it("is named before the hint, so the hint ends the message", () => {
    const p = build(agent("{type: string, secret: true}", '"{{ params.tokn }}"'));
    expectDiagnostic(
      p,
      "error",
      A,
      13,
      12,
      /^`params.tok`: the agent declares no param `tokn` in `params.schema`; did you mean `token`\?$/,
    );
  });
});

describe("notify.url", () => {
  function gated(url: string): string {
    return agent("{type: string, secret: true}", '"{{ params.token }}"').replace(
      'allowlist: ["*"]',
      `allowlist:
        - name: drop
          require_approval: {notify: {url: "${url}"}}`,
    );
  }

  it("a literal that is not an absolute http(s) URL is a build error (it could never be sent)", () => {
    for (const url of ["hooks.example.com/approve", "ftp://hooks.example.com/approve"]) {
      const p = build(gated(url));
      expectDiagnostic(p, "error", A, 17, 44, /^`notify.url` must be an absolute http\(s\) URL/);
    }
  });

  it("an https literal or {{ params.X }} compiles", () => {
    for (const url of ["https://hooks.example.com/approve", "{{ params.q }}"]) {
      expect(build(gated(url)).errors).toEqual([]);
    }
  });
});
