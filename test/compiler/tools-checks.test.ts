/**
 * Build checks for agents that act (docs/agents-and-tools.md): `*.server.yaml` files, an agent's `servers:`
 * block (paths, params, allowlists, approval policies), secrets that only travel through step
 * params, `prompt.reflect` and `confidence_threshold`. Every mistake is reported at its
 * `file:line:col`, all of them in one build.
 */
import { afterAll, describe, expect, it } from "vitest";
import { compileFiles, expectDiagnostic, GATEWAY, HEAD, removeProjects } from "./temp-project.ts";

afterAll(removeProjects);

const T = "t.workflow.yaml";
const A = "agents/a.agent.yaml";
const S = "servers/crm.server.yaml";

const SERVER = `name: crm
url: "https://mcp.example.com/{{ params.region }}/mcp"
auth:
  header: X-Api-Key
  scheme: raw
  secret: "{{ params.api_key }}"
params:
  api_key: {secret: true, description: key}
  region: {default: eu}
timeout_s: 10
`;

const AGENT = `name: a
model: economy
params:
  schema:
    type: object
    properties:
      key: {type: string, secret: true}
      q: {type: string}
prompt:
  user: "{{ params.q }}"
  reflect: "Again: {{ params.q }}"
servers:
  - name: crm
    path: ../servers/crm.server.yaml
    params:
      api_key: "{{ params.key }}"
    access:
      allowlist:
        - crm-read-*
        - lookup
        - name: delete-*
          require_approval:
            on_reject: recover
            timeout: 1h30m
            timeout_behavior: reject
            notify: {url: "https://hooks.example.com/x"}
`;

const WORKFLOW = `${HEAD.replace("  - {name: TOKEN, secret: true}\n", "  - {name: TOKEN, secret: true}\n  - {name: CRM_KEY, secret: true}\n")}  - id: ask
    agent: ./agents/a.agent.yaml
    confidence_threshold: 0.8
    params: {key: "{{ env.CRM_KEY }}", q: hi}
model_policy: {cost_budget_usd: 0.5}
`;

describe("a valid agent with a tool server", () => {
  it("compiles the server file into the agent: url, auth, params, allowlist, approval policy, reflect, threshold", () => {
    const p = compileFiles({ "gateway.yaml": GATEWAY, [S]: SERVER, [A]: AGENT, [T]: WORKFLOW });
    expect(p.errors).toEqual([]);
    const agent = p.result.bundle?.agents[A];
    expect(agent?.maxTurns).toBe(10);
    expect(agent?.reflect).toBeDefined();
    expect(agent?.secretParams).toEqual(["key"]);
    const ref = agent?.servers?.[0];
    expect(ref?.name).toBe("crm");
    expect(ref?.server).toMatchObject({
      key: S,
      name: "crm",
      auth: { header: "X-Api-Key", scheme: "raw" },
      params: { api_key: { secret: true }, region: { secret: false, default: "eu" } },
      timeoutS: 10,
    });
    expect(ref?.allow).toEqual([
      { pattern: "crm-read-*", approval: null },
      { pattern: "lookup", approval: null },
      {
        pattern: "delete-*",
        approval: {
          onReject: "recover",
          timeoutS: 5400,
          timeoutBehavior: "reject",
          notify: { url: { t: "lit", v: "https://hooks.example.com/x" }, signSecret: null },
        },
      },
    ]);
    const step = p.result.bundle?.workflows[T]?.steps[0];
    expect(step?.kind === "agent" && step.confidenceThreshold).toBe(0.8);
  });

  it("warns when a server has no access.allowlist (every tool allowed)", () => {
    const agent = AGENT.replace(/ {4}access:[\s\S]*$/, "");
    const p = compileFiles({ "gateway.yaml": GATEWAY, [S]: SERVER, [A]: agent, [T]: WORKFLOW });
    expect(p.errors).toEqual([]);
    expectDiagnostic(p, "warning", A, 13, 11, /^server `crm` has no `access.allowlist`/);
  });
});

describe("mistakes, all reported with file:line:col", () => {
  const BAD_SERVER = `name: bad
url: "https://{{ env.HOST }}/mcp"
auth:
  secret: "{{ params.token }}"
params:
  token: {description: not marked secret}
tiemout_s: 5
`;
  const OK_SERVER = `name: ok
url: "{{ params.url }}"
params:
  url: {}
  region: {default: eu}
`;
  const BAD_AGENT = `name: a
model: economy
params:
  schema:
    type: object
    properties:
      key: {type: string, secret: true}
prompt:
  user: "Use {{ params.key }}"
servers:
  - name: one
    path: ../servers/missing.server.yaml
  - name: two
    path: ../servers/bad.server.yaml
  - name: three
    path: ../servers/ok.server.yaml
    params:
      regoin: us
      url: "{{ env.URL }}"
    access:
      allowlist: ["crm-*-read", "*", {name: "a**"}, {name: del, require_approval: {timeout: soon}}]
  - name: three
    path: ../servers/ok.server.yaml
    params: {url: "env:URL"}
`;
  const BAD_WORKFLOW = `${HEAD}  - id: ask
    agent: ./agents/a.agent.yaml
    confidence_threshold: 1.5
    params: {key: x}
  - id: shape
    transform: {ops: []}
    confidence_threshold: 0.5
model_policy: {cost_budget_usd: 0.5}
`;
  const p = compileFiles({
    "gateway.yaml": GATEWAY,
    "servers/bad.server.yaml": BAD_SERVER,
    "servers/ok.server.yaml": OK_SERVER,
    [A]: BAD_AGENT,
    [T]: BAD_WORKFLOW,
  });
  const B = "servers/bad.server.yaml";

  it("fails the build", () => {
    expect(p.result.bundle).toBeNull();
    expect(p.errors.length).toBe(15);
  });
  it("a prompt that reads a secret param", () =>
    expectDiagnostic(
      p,
      "error",
      A,
      9,
      9,
      /param `key` is `secret: true`; a prompt would send it to the model/,
    ));
  it("a server path that does not exist", () =>
    expectDiagnostic(p, "error", A, 12, 11, /tool server file `..\/servers\/missing.server.yaml` not found/));
  it("a server param without default that the agent does not give", () =>
    expectDiagnostic(p, "error", A, 13, 5, /server `bad` needs param `token`/));
  it("an unknown server param, with a hint", () =>
    expectDiagnostic(p, "error", A, 18, 7, /declares no param `regoin`; did you mean `region`\?/));
  it("env read in an agent file, as {{ env.X }} and as env:X", () => {
    expectDiagnostic(p, "error", A, 19, 12, /agent files never read env/);
    expectDiagnostic(p, "error", A, 24, 19, /agent files never read env/);
  });
  it("allowlist patterns other than name, prefix* and *", () => {
    expectDiagnostic(p, "error", A, 21, 19, /allowlist entry `crm-\*-read`/);
    expectDiagnostic(p, "error", A, 21, 45, /allowlist entry `a\*\*`/);
  });
  it("an approval timeout that is not a duration", () =>
    expectDiagnostic(p, "error", A, 21, 93, /`timeout` must be a duration such as `30m`.*got `soon`/));
  it("a server name used twice", () =>
    expectDiagnostic(p, "error", A, 22, 11, /server name `three` is used twice/));
  it("env read in a server file", () => expectDiagnostic(p, "error", B, 2, 6, /server files never read env/));
  it("auth.secret reading a param that is not secret: true", () =>
    expectDiagnostic(p, "error", B, 4, 11, /reads param `token`, which is not declared `secret: true`/));
  it("a typo in a server file, with a hint", () =>
    expectDiagnostic(p, "error", B, 7, 1, /unknown field `tiemout_s`; did you mean `timeout_s`\?/));
  it("confidence_threshold out of range, and on a step that is not an agent", () => {
    expectDiagnostic(p, "error", T, 12, 27, /`confidence_threshold` must be a number from 0 to 1, got 1.5/);
    expectDiagnostic(
      p,
      "error",
      T,
      16,
      5,
      /`confidence_threshold` belongs on agent steps, not on a transform step/,
    );
  });
});

describe("auth.secret", () => {
  it("must be {{ params.NAME }}", () => {
    const server = SERVER.replace('secret: "{{ params.api_key }}"', 'secret: "literal-key-123"');
    const p = compileFiles({ "gateway.yaml": GATEWAY, [S]: server, [A]: AGENT, [T]: WORKFLOW });
    expectDiagnostic(p, "error", S, 6, 11, /`auth.secret` must be `{{ params.NAME }}`/);
  });
});
