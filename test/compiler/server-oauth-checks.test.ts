/**
 * A server file's `auth: {scheme: oauth}` (docs/agents-and-tools.md, "OAuth"): client credentials or
 * a refresh token, whose secrets must be the server's `secret: true` params, each misuse a build
 * error at its `file:line:col`.
 */
import { afterAll, describe, expect, it } from "vitest";
import { compileFiles, expectDiagnostic, GATEWAY, HEAD, removeProjects } from "./temp-project.ts";

afterAll(removeProjects);

const S = "servers/s.server.yaml";

/** A server file with the given `auth:` lines (line 3 on). */
function server(auth: string): string {
  return `name: s
url: "https://mcp.example.com/mcp"
auth:
${auth}params:
  secret: {secret: true}
  plain: {}
`;
}

function build(auth: string) {
  return compileFiles({
    "gateway.yaml": GATEWAY,
    [S]: server(auth),
    "agents/a.agent.yaml": `name: a
model: economy
params:
  schema: {type: object, properties: {k: {type: string, secret: true}}}
prompt: {user: hi}
servers:
  - name: s
    path: ../servers/s.server.yaml
    params: {secret: "{{ params.k }}", plain: x}
    access: {allowlist: ["*"]}
`,
    "t.workflow.yaml": `${HEAD}  - id: ask
    agent: ./agents/a.agent.yaml
    params: {k: "{{ env.TOKEN }}"}
model_policy: {cost_budget_usd: 0.5}
`,
  });
}

describe("auth: {scheme: oauth}", () => {
  it("compiles client credentials with scopes", () => {
    const p = build(
      '  scheme: oauth\n  client_id: edge\n  client_secret: "{{ params.secret }}"\n  scopes: [tools, read]\n',
    );
    expect(p.errors).toEqual([]);
    const auth = p.result.bundle?.agents["agents/a.agent.yaml"]?.servers?.[0]?.server.auth;
    expect(auth).toMatchObject({
      scheme: "oauth",
      clientId: { t: "lit", v: "edge" },
      refreshToken: null,
      scopes: ["tools", "read"],
    });
  });

  it("compiles a refresh-token grant", () => {
    const p = build('  scheme: oauth\n  client_id: edge\n  refresh_token: "{{ params.secret }}"\n');
    expect(p.errors).toEqual([]);
  });

  it("needs client_id, and a client_secret or a refresh_token", () => {
    const p = build("  scheme: oauth\n");
    expectDiagnostic(p, "error", S, 4, 3, /needs `client_id`/);
    expectDiagnostic(p, "error", S, 4, 3, /needs `client_secret` \(client credentials\) or `refresh_token`/);
  });

  it("refuses a secret read from a param that is not secret: true", () => {
    const p = build('  scheme: oauth\n  client_id: edge\n  refresh_token: "{{ params.plain }}"\n');
    expectDiagnostic(
      p,
      "error",
      S,
      6,
      18,
      /`auth.refresh_token` reads param `plain`, which is not declared `secret: true`/,
    );
  });

  it("refuses OAuth fields under another scheme", () => {
    const p = build('  secret: "{{ params.secret }}"\n  client_id: edge\n');
    expectDiagnostic(p, "error", S, 5, 14, /^`client_id` is for `scheme: oauth`/);
  });
});
