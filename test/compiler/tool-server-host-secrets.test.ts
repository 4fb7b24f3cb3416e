/**
 * The tool-server counterpart of the webhook rule (docs/file-format.md): a secret env var that reaches a tool
 * server (through the step's params, the agent's `servers[].params`, the server's params) or
 * signs an approval notification, while the url's host comes from the invoke's params or a step
 * output, is a build warning at the step param that carries the url. A warning, not an error:
 * the build still succeeds.
 */
import { afterAll, describe, expect, it } from "vitest";
import {
  compileFiles,
  expectDiagnostic,
  GATEWAY,
  HEAD,
  removeProjects,
  type TempProject,
} from "./temp-project.ts";

afterAll(removeProjects);

const T = "t.workflow.yaml";
const A = "agents/a.agent.yaml";
const S = "servers/ops.server.yaml";
const HOST_WARNING =
  /a caller could send the secret to any host\. Take the host from a literal or an env var$/;

/** A server reached at `{{ params.url }}`, its key sent in a header. */
const AUTH_SERVER = `name: ops
url: "{{ params.url }}"
auth:
  secret: "{{ params.token }}"
params:
  url: {description: the MCP endpoint}
  token: {secret: true}
`;

/** A server with no `auth`: its key is a `secret: true` param (sent in MCP initialize's config). */
const PARAM_SERVER = `name: ops
url: "{{ params.url }}"
params:
  url: {}
  api_key: {secret: true}
`;

const agent = (serverParams: string, allow = `["*"]`) => `name: a
model: economy
params:
  schema:
    type: object
    properties:
      mcp_url: {type: string}
      token: {type: string, secret: true}
      notify_url: {type: string}
      sign_key: {type: string, secret: true}
      q: {type: string}
prompt:
  user: "{{ params.q }}"
servers:
  - name: ops
    path: ../servers/ops.server.yaml
    params: ${serverParams}
    access:
      allowlist: ${allow}
`;
const AGENT = agent(`{url: "{{ params.mcp_url }}", token: "{{ params.token }}"}`);

const HEAD_ENV = HEAD.replace(
  "  - {name: TOKEN, secret: true}\n",
  "  - {name: TOKEN, secret: true}\n  - {name: TOOL_TOKEN, secret: true}\n  - {name: MCP_HOST, secret: false}\n",
);
/** The agent step `act` on line 12 (HEAD_ENV has 11 lines); its params from line 14. */
const workflow = (params: string, before = "") => `${HEAD_ENV}${before}  - id: act
    agent: ./agents/a.agent.yaml
    params:
${params}model_policy: {cost_budget_usd: 0.5}
`;
const FROM_INVOKE = `      q: hi
      mcp_url: "{{ params.mcp_url }}"
      token: "{{ env.TOOL_TOKEN }}"
`;

const build = (files: { server?: string; agent?: string; workflow: string }): TempProject =>
  compileFiles({
    "gateway.yaml": GATEWAY,
    [S]: files.server ?? AUTH_SERVER,
    [A]: files.agent ?? AGENT,
    [T]: files.workflow,
  });
const hostWarnings = (p: TempProject) => p.warnings.filter((w) => HOST_WARNING.test(w.message));

describe("a secret sent to a tool server whose host the caller picks", () => {
  it("warns at the step param that carries the url when the secret goes in auth, and still builds", () => {
    const p = build({ workflow: workflow(FROM_INVOKE) });
    expect(p.errors).toEqual([]);
    expect(p.result.bundle).not.toBeNull();
    const w = expectDiagnostic(p, "warning", T, 16, 16, HOST_WARNING);
    expect(w.message).toBe(
      "step `act`: tool server `ops` gets secret `env.TOOL_TOKEN`, but its url host comes from `params.mcp_url`: a caller could send the secret to any host. Take the host from a literal or an env var",
    );
    expect(hostWarnings(p)).toHaveLength(1);
  });

  it("warns when the secret goes in a `secret: true` server param instead of auth", () => {
    const p = build({
      server: PARAM_SERVER,
      agent: agent(`{url: "{{ params.mcp_url }}", api_key: "{{ params.token }}"}`),
      workflow: workflow(FROM_INVOKE),
    });
    expect(p.errors).toEqual([]);
    expectDiagnostic(p, "warning", T, 16, 16, /^step `act`: tool server `ops` gets secret `env\.TOOL_TOKEN`/);
  });

  it("warns when the secret goes in a plain server param (every param is sent to the server)", () => {
    const server = PARAM_SERVER.replace("api_key: {secret: true}", "tenant: {}");
    const p = build({
      server,
      agent: agent(`{url: "{{ params.mcp_url }}", tenant: "{{ params.token }}"}`),
      workflow: workflow(FROM_INVOKE),
    });
    expect(p.errors).toEqual([]);
    expectDiagnostic(p, "warning", T, 16, 16, /^step `act`: tool server `ops` gets secret `env\.TOOL_TOKEN`/);
  });

  it("warns when the url comes from a step output", () => {
    const discover = `  - id: discover
    transform: {inputs: [{from: "{{ params }}"}], ops: []}
`;
    const p = build({
      workflow: workflow(
        `      q: hi\n      mcp_url: "{{ step.discover.result }}"\n      token: "{{ env.TOOL_TOKEN }}"\n`,
        discover,
      ),
    });
    expect(p.errors).toEqual([]);
    expectDiagnostic(
      p,
      "warning",
      T,
      18,
      16,
      /^step `act`: tool server `ops` gets secret `env\.TOOL_TOKEN`, but its url host comes from `step\.discover`: /,
    );
  });

  it("warns when only the host part of a url built in the step comes from params", () => {
    const p = build({
      workflow: workflow(
        `      mcp_url: "https://{{ params.host }}/mcp"\n      token: "{{ env.TOOL_TOKEN }}"\n`,
      ),
    });
    expectDiagnostic(p, "warning", T, 15, 16, /url host comes from `params\.host`/);
  });

  it("warns for a fan-out over URLs from params", () => {
    const p = build({
      workflow: workflow(`      mcp_url: "{{ item }}"\n      token: "{{ env.TOOL_TOKEN }}"\n`).replace(
        "    params:\n",
        "    for_each: {from: params.urls, concurrency: 2}\n    params:\n",
      ),
    });
    expectDiagnostic(p, "warning", T, 16, 16, /url host comes from `item` \(items of `params\.urls`\)/);
  });

  it("points at the step's `agent:` when no one step param carries the url", () => {
    // The agent builds the url from all of its params at once.
    const p = build({
      agent: agent(`{url: "{{ values(params)[0] }}", token: "{{ params.token }}"}`),
      workflow: workflow(FROM_INVOKE),
    });
    expect(p.errors).toEqual([]);
    expectDiagnostic(
      p,
      "warning",
      T,
      13,
      12,
      /^step `act`: tool server `ops` gets secret `env\.TOOL_TOKEN`, but its url host comes from `params\.mcp_url`/,
    );
  });
});

describe("no warning", () => {
  it("for a literal host in the server file", () => {
    const server = AUTH_SERVER.replace(
      'url: "{{ params.url }}"',
      'url: "https://mcp.example.com/{{ params.url }}"',
    );
    const p = build({ server, workflow: workflow(FROM_INVOKE) });
    expect(p.errors).toEqual([]);
    expect(hostWarnings(p)).toEqual([]);
  });

  it("for a literal url given by the agent file", () => {
    const p = build({
      agent: agent(`{url: "https://mcp.example.com/mcp", token: "{{ params.token }}"}`),
      workflow: workflow(FROM_INVOKE),
    });
    expect(p.errors).toEqual([]);
    expect(hostWarnings(p)).toEqual([]);
  });

  it("for a literal host in the step, the path from params", () => {
    const p = build({
      workflow: workflow(
        `      mcp_url: "https://mcp.example.com/{{ params.path }}"\n      token: "{{ env.TOOL_TOKEN }}"\n`,
      ),
    });
    expect(p.errors).toEqual([]);
    expect(hostWarnings(p)).toEqual([]);
  });

  it("for a host from an env var", () => {
    const p = build({
      workflow: workflow(
        `      mcp_url: "https://{{ env.MCP_HOST }}/mcp"\n      token: "{{ env.TOOL_TOKEN }}"\n`,
      ),
    });
    expect(p.errors).toEqual([]);
    expect(hostWarnings(p)).toEqual([]);
  });

  it("for a url from params when no secret env var reaches the server", () => {
    const p = build({
      workflow: workflow(`      mcp_url: "{{ params.mcp_url }}"\n      token: "{{ params.token }}"\n`),
    });
    expect(p.errors).toEqual([]);
    expect(hostWarnings(p)).toEqual([]);
  });

  it("for a url from params and an env var declared `secret: false`", () => {
    const p = build({
      workflow: workflow(`      mcp_url: "{{ params.mcp_url }}"\n      token: "{{ env.MCP_HOST }}"\n`),
    });
    expect(p.errors).toEqual([]);
    expect(hostWarnings(p)).toEqual([]);
  });
});

describe("an approval notification signed with a secret", () => {
  const gated = (url: string) =>
    agent(
      `{url: "https://mcp.example.com/mcp", token: "{{ params.token }}"}`,
      `[{name: deploy, require_approval: {notify: {url: "${url}", sign: {secret: "{{ params.sign_key }}"}}}}]`,
    );
  const NOTIFY = `      notify_url: "{{ params.notify_url }}"\n      sign_key: "{{ env.TOOL_TOKEN }}"\n`;

  it("warns at the step param of the notify url when the host comes from params", () => {
    const p = build({ agent: gated("{{ params.notify_url }}"), workflow: workflow(NOTIFY) });
    expect(p.errors).toEqual([]);
    expect(p.result.bundle).not.toBeNull();
    const w = expectDiagnostic(p, "warning", T, 15, 19, HOST_WARNING);
    expect(w.message).toBe(
      "step `act`: the approval notification for `deploy` of tool server `ops` is signed with secret `env.TOOL_TOKEN`, but its url host comes from `params.notify_url`: a caller could send the secret to any host. Take the host from a literal or an env var",
    );
    expect(hostWarnings(p)).toHaveLength(1);
  });

  it("does not warn for a literal notify host", () => {
    const p = build({
      agent: gated("https://hooks.example.com/{{ params.notify_url }}"),
      workflow: workflow(NOTIFY),
    });
    expect(p.errors).toEqual([]);
    expect(hostWarnings(p)).toEqual([]);
  });

  it("does not warn for a notify host from an env var", () => {
    const p = build({
      agent: gated("{{ params.notify_url }}"),
      workflow: workflow(
        `      notify_url: "https://{{ env.MCP_HOST }}/hook"\n      sign_key: "{{ env.TOOL_TOKEN }}"\n`,
      ),
    });
    expect(p.errors).toEqual([]);
    expect(hostWarnings(p)).toEqual([]);
  });
});

/** A workflow step passing `env.TOOL_TOKEN` and an `mcp_url` into a sub-workflow whose agent uses both. */
function delegating(mcpUrl: string) {
  return {
    "gateway.yaml": GATEWAY,
    [A]: AGENT,
    [S]: AUTH_SERVER,
    [T]: `${HEAD_ENV}  - id: delegate
    workflow: ./sub/act.yaml
    input:
      q: hi
      mcp_url: "${mcpUrl}"
      token: "{{ env.TOOL_TOKEN }}"
model_policy: {cost_budget_usd: 0.5}
`,
    "sub/act.yaml": `kind: workflow
name: sub/act
visibility: sub-workflow
params:
  schema: {type: object}
pipeline:
  - id: act
    agent: ../agents/a.agent.yaml
    params:
      q: "{{ params.q }}"
      mcp_url: "{{ params.mcp_url }}"
      token: "{{ params.token }}"
`,
  };
}

describe("a secret passed into a sub-workflow", () => {
  it("warns at the workflow step's input when the sub-workflow's tool server gets it at a host the caller picks", () => {
    const p = compileFiles(delegating("{{ params.mcp_url }}"));
    expect(p.errors).toEqual([]);
    expectDiagnostic(
      p,
      "warning",
      T,
      15,
      7,
      /^step `delegate` passes secrets into sub-workflow `sub\/act`: in its step `act`, tool server `ops` gets secret `env\.TOOL_TOKEN`, but its url host comes from `params\.mcp_url`: a caller could send the secret to any host\. Take the host from a literal or an env var$/,
    );
  });

  it("says nothing when the host comes from a literal or an env var, even through the sub-workflow", () => {
    const p = compileFiles(delegating("https://{{ env.MCP_HOST }}/mcp"));
    expect(p.errors).toEqual([]);
    expect(p.warnings.filter((w) => HOST_WARNING.test(w.message))).toEqual([]);
  });
});
