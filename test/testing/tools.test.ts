/**
 * Agents that act, in workflow tests: tool calls answered by mocks keyed `<step>/tools/<tool>`
 * (what the tool received is recorded under that path), scripted model turns that call tools,
 * the real allowlist (a tool that is not allowlisted is never called, mock or not), a call
 * without a mock failing with `unmocked_step` while a real MCP server sees nothing, approvals
 * decided by the case on the virtual clock, and secrets passed to a tool server never printed.
 */
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Bundle, CompiledServerRef, JsonObject } from "../../src/bundle.ts";
import { compileProject } from "../../src/compiler/index.ts";
import type { MockSpec, TestCase } from "../../src/compiler/test-files/suite.ts";
import { type CaseRun, runCase } from "../../src/testing/run-case.ts";
import { listedTools } from "../../src/testing/tool-mocks.ts";
import { removeProjects, writeProject } from "../compiler/temp-project.ts";
import { startMcpTools } from "../servers/mcp-tools.ts";
import { root, runCli, runTests } from "./helpers.ts";

afterAll(removeProjects);

const TOOLS_FIXTURE = join(root, "test/fixtures/wftest-tools");
const project = compileProject(TOOLS_FIXTURE);
const bundle = project.bundle as Bundle;

function fixtureCase(file: string, name: string): { key: string; tc: TestCase } {
  const suite = project.tests.find((s) => s.file.key === `tests/${file}`);
  const tc = suite?.cases.find((c) => c.name === name);
  if (!suite?.workflowKey || !tc) throw new Error(`no case ${name} in ${file}`);
  return { key: suite.workflowKey, tc };
}

async function run(name: string, change: Partial<TestCase> = {}): Promise<CaseRun> {
  const { key, tc } = fixtureCase("calc.test.yaml", name);
  return runCase(bundle, key, { ...tc, ...change }, "t".repeat(64));
}

const agentTurns = (...answers: MockSpec["answers"]): MockSpec => ({
  kind: "agent",
  tool: null,
  answers,
  repeat: false,
});
const toolMock = (tool: string, ...answers: MockSpec["answers"]): MockSpec => ({
  kind: "tool",
  tool,
  answers,
  repeat: answers.length === 1,
});

const GATEWAY = `env: [{ name: MODEL_KEY, secret: true }]
providers: [{ name: p, type: openai, config: { api_key: "{{ env.MODEL_KEY }}" } }]
model_groups: [{ name: g, models: [p/m] }]
`;

/** A workflow `name` with one step `id` of the agent agents/calc.agent.yaml. */
const agentWorkflow = (name: string, env: string, id: string, params: string) => `kind: workflow
name: ${name}
params: { schema: { type: object } }
env: [${env}]
pipeline:
  - id: ${id}
    agent: agents/calc.agent.yaml
    params: ${params}
`;

function requestOf(r: CaseRun, path: string, index: number): JsonObject {
  const request = r.log.requests.get(path)?.[index];
  if (!request) throw new Error(`no request ${index} of ${path}`);
  return request as JsonObject;
}

describe("the tool fixture project", () => {
  it("compiles, and every case passes", async () => {
    expect(project.diagnostics.map((d) => d.text)).toEqual([]);
    const { summary, out } = await runTests(TOOLS_FIXTURE);
    expect(summary, out).toMatchObject({ files: 3, cases: 12, passed: 12, failed: 0, errors: 0 });
  });
});

describe("tool mocks", () => {
  it("answer the call the model makes; the tool's arguments are recorded under its path", async () => {
    const r = await run("adds through the tool, which gets the model's arguments");
    expect(r.envelope.status).toBe("complete");
    expect(r.log.requests.get("risk/tools/get-sum")).toEqual([
      {
        server: "calc",
        url: "https://calc.example/mcp",
        headers: { authorization: "Bearer ***" },
        name: "get-sum",
        arguments: { a: 2, b: 3 },
      },
    ]);
    const rec = r.records.get("risk");
    expect(rec?.tool_calls).toEqual([
      {
        server: "calc",
        name: "get-sum",
        arguments: { a: 2, b: 3 },
        result: { sum: 5 },
        error: null,
        // On the virtual clock, like the step's own times.
        started_at: rec?.started_at,
        finished_at: rec?.started_at,
        approval: null,
      },
    ]);
    // The tool's result went back to the model in the next turn, in OpenAI's `tool` message.
    expect(requestOf(r, "risk", 1).messages).toContainEqual({
      role: "tool",
      tool_call_id: "call_1_0",
      content: '{"sum":5}',
    });
    expect(r.envelope.output).toEqual({ result: 5 });
  });

  it("never call a tool that is not allowlisted, even a mocked one: tool_not_permitted", async () => {
    const r = await run("adds through the tool, which gets the model's arguments", {
      mocks: {
        risk: agentTurns({ tool_calls: [{ name: "drop-table", arguments: {} }] }, { output: { answer: 1 } }),
        "risk/tools/drop-table": toolMock("drop-table", { text: "dropped" }),
      },
    });
    expect(r.envelope.error).toMatchObject({ code: "tool_not_permitted", step: "risk" });
    expect(r.envelope.error?.message).toContain("`drop-table`, which is not an allowlisted tool");
    expect(r.log.requests.has("risk/tools/drop-table")).toBe(false);
    expect(r.records.get("risk")?.tool_calls).toEqual([]);
    // It was never offered either: only what the allowlist admits is.
    expect(requestOf(r, "risk", 0).tools).toEqual(["delete-record", "echo", "get-sum"]);
    expect(r.log.unmocked).toEqual([]);
  });

  it("fail the step with unmocked_step when a call has no mock, and the loop stops there", async () => {
    const { tc } = fixtureCase("calc.test.yaml", "adds through the tool, which gets the model's arguments");
    const r = await run("adds through the tool, which gets the model's arguments", {
      mocks: { risk: tc.mocks.risk as MockSpec },
    });
    expect(r.log.unmocked).toEqual([
      "tool call `risk/tools/get-sum` has no mock: add `risk/tools/get-sum:` under the case's `mocks`",
    ]);
    expect(r.envelope.error).toMatchObject({ code: "unmocked_step", step: "risk" });
    expect(r.log.requests.get("risk")).toHaveLength(1);
    expect(r.log.requests.has("risk/tools/get-sum")).toBe(false);
  });

  it("list a server's exact allowlist names, the mocked and the scripted tools, each on one server", () => {
    const ref = (name: string, patterns: string[] | null) =>
      ({
        name,
        allow: patterns?.map((pattern) => ({ pattern, approval: null })) ?? null,
      }) as CompiledServerRef;
    const listed = listedTools({
      path: "s/2",
      refs: [ref("a", ["echo", "get-*"]), ref("b", null)],
      toolMocks: [
        { key: "s/tools/get-sum", tool: "get-sum" },
        { key: "s/2/tools/other", tool: "other" },
        { key: "t/tools/never", tool: "never" },
      ],
      scripted: ["b__echo", "x", "get-diff"],
      allowPrivate: false,
    });
    expect(Object.fromEntries(listed)).toEqual({
      a: ["echo", "get-diff", "get-sum"],
      b: ["echo", "other", "x"],
    });
  });
});

describe("a tool call without a mock", () => {
  let server: { port: number; close(): Promise<void> };
  beforeAll(async () => {
    server = await startMcpTools();
  });
  afterAll(() => server.close());
  const logOf = async (key: string) =>
    (await (await fetch(`http://127.0.0.1:${server.port}/__log/${key}`)).json()) as unknown[];

  it("fails the case with unmocked_step naming the call, and the MCP server sees nothing", async () => {
    const url = `http://127.0.0.1:${server.port}/mcp/unmocked-tool`;
    const dir = writeProject({
      "gateway.yaml": GATEWAY,
      "servers/calc.server.yaml": `name: calc
url: "{{ params.url }}"
params: { url: {} }
`,
      "agents/calc.agent.yaml": `name: calc
params: { schema: { type: object, properties: { url: { type: string } } } }
servers:
  - name: calc
    path: ../servers/calc.server.yaml
    params: { url: "{{ params.url }}" }
    access: { allowlist: [get-sum] }
`,
      "add.workflow.yaml": agentWorkflow(
        "add",
        "{ name: CALC_URL, secret: false }",
        "risk",
        '{ url: "{{ env.CALC_URL }}" }',
      ),
      "tests/add.test.yaml": `kind: test
workflow: add
cases:
  - name: forgot the tool
    env: { CALC_URL: "${url}", ALLOW_PRIVATE_WEBHOOKS: "true" }
    mocks:
      risk:
        - tool_calls: [{ name: get-sum, arguments: { a: 1, b: 2 } }]
        - output: { sum: 3 }
    expect: { status: failed }
`,
    });
    // The server does log what reaches it.
    await fetch(`http://127.0.0.1:${server.port}/mcp/unmocked-control`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
    });
    expect(await logOf("unmocked-control")).toHaveLength(1);

    const { summary, out } = await runTests(dir);
    expect(summary).toMatchObject({ cases: 1, passed: 0, failed: 1 });
    // It fails even though the expectation (status failed) would have matched.
    expect(out).toContain(
      "unmocked_step: tool call `risk/tools/get-sum` has no mock: add `risk/tools/get-sum:` under the case's `mocks`",
    );
    expect(await logOf("unmocked-tool")).toEqual([]);
  });
});

describe("approvals", () => {
  it("decide on the virtual clock: the call waits `after_s`, then is made", async () => {
    const r = await run("makes an approved delete");
    expect(r.envelope.status).toBe("complete");
    expect(r.virtualMs).toBe(600_000);
    const [approval] = r.approvals as JsonObject[];
    expect(approval).toMatchObject({
      step: "risk",
      kind: "tool",
      server: "calc",
      tool: "delete-record",
      arguments: { id: "r-1" },
      status: "approved",
      comment: "fine",
    });
    expect(Date.parse(approval?.decided_at as string) - Date.parse(approval?.created_at as string)).toBe(
      600_000,
    );
    // Its own timeout (1 h) is the expiry, not the run's deadline (2 h).
    expect(Date.parse(approval?.expires_at as string) - Date.parse(r.envelope.created_at)).toBe(3_600_000);
    const call = r.records.get("risk")?.tool_calls[0];
    expect(call?.approval).toEqual({ id: approval?.id, status: "approved", comment: "fine" });
    expect(Date.parse(call?.started_at ?? "")).toBe(Date.parse(approval?.decided_at as string));
  });

  it("fail the step on a rejection under on_reject: fail, and the call is never made", async () => {
    const r = await run("fails the step when a delete is rejected");
    expect(r.envelope.error).toMatchObject({ code: "approval_rejected", step: "risk" });
    expect(r.log.requests.has("risk/tools/delete-record")).toBe(false);
  });

  it("give a rejection back to the model under on_reject: recover, and go on", async () => {
    const r = await run("goes on after a rejected archive, and after one nobody decided");
    expect(r.envelope.status).toBe("complete");
    expect(requestOf(r, "risk", 1).messages).toContainEqual({
      role: "tool",
      tool_call_id: "call_1_0",
      content: "ERROR: A reviewer rejected this call; it was not made. Comment: not r-4",
    });
    // The undecided one timed out at its own 30 min (timeout_behavior: reject).
    expect((r.approvals as JsonObject[]).map((a) => a.status).sort()).toEqual(["rejected", "timeout"]);
    expect(r.virtualMs).toBe(1_800_000);
  });

  it("time out at the approval's own timeout on the virtual clock: approval_timeout", async () => {
    const started = performance.now();
    const r = await run("fails the step when nobody decides a delete within an hour");
    expect(r.envelope.error).toMatchObject({ code: "approval_timeout", step: "risk" });
    expect(r.virtualMs).toBe(3_600_000);
    expect(performance.now() - started).toBeLessThan(10_000);
  });

  it("wait for the run's deadline when `timeout` meets an approval without its own timeout", async () => {
    const r = await run("fails a step whose output a reviewer rejects", {
      approvals: {
        "risk/needs_human": { decisions: [{ decision: "timeout", comment: null, after_s: 0 }], repeat: true },
      },
    });
    expect(r.envelope.error).toMatchObject({ code: "timeout", step: "risk" });
    expect(r.virtualMs).toBe(7_200_000);
    // Still pending when the run ended: closed as timed out, as the run object does.
    expect((r.approvals as JsonObject[]).map((a) => [a.kind, a.status])).toEqual([
      ["needs_human", "timeout"],
    ]);
  });

  it("fail at once with unmocked_step when the case decides nothing, instead of waiting", async () => {
    const r = await run("makes an approved delete", { approvals: {} });
    expect(r.log.unmocked).toEqual([
      "the call of `delete-record` by `risk` waits for a human: decide it under the case's `approvals` (`risk/tools/delete-record: approved`)",
    ]);
    expect(r.envelope.error).toMatchObject({ code: "unmocked_step", step: "risk" });
    expect(r.virtualMs).toBe(0);
    expect(r.approvals).toEqual([]);
  });
});

describe("secrets passed to a tool server", () => {
  const TOKEN = "calc-sEcReT-0815-value";

  it("never reach the output: not in headers, results, arguments nor failure lines", () => {
    const dir = writeProject({
      "gateway.yaml": GATEWAY,
      "servers/calc.server.yaml": `name: calc
url: https://calc.example/mcp
auth: { secret: "{{ params.token }}" }
params: { token: { secret: true } }
`,
      "agents/calc.agent.yaml": `name: calc
params: { schema: { type: object, properties: { token: { type: string, secret: true } } } }
servers:
  - name: calc
    path: ../servers/calc.server.yaml
    params: { token: "{{ params.token }}" }
    access: { allowlist: [whoami] }
`,
      "who.workflow.yaml": agentWorkflow(
        "who",
        "{ name: CALC_TOKEN, secret: true }",
        "ask",
        '{ token: "{{ env.CALC_TOKEN }}" }',
      ),
      "tests/who.test.yaml": `kind: test
workflow: who
cases:
  - name: echoes the token
    env: { CALC_TOKEN: "${TOKEN}" }
    mocks:
      ask:
        - tool_calls: [{ name: whoami, arguments: { as: "${TOKEN}" } }]
        - output: { me: "${TOKEN}" }
      ask/tools/whoami: { text: "you are ${TOKEN} (${btoa(TOKEN)})" }
    expect:
      output: { me: nobody }
      steps:
        ask:
          tool_calls: [{ arguments: { as: x }, result: y }]
        ask/tools/whoami:
          request: { headers: { Authorization: "Bearer wrong" } }
`,
    });
    const r = runCli(dir);
    expect(r.code).toBe(1);
    const printed = r.stdout + r.stderr;
    expect(printed).toContain('expect.steps.ask.tool_calls[0].arguments.as: expected "x", got "***"');
    expect(printed).toContain('expect.steps.ask.tool_calls[0].result: expected "y", got "you are *** (***)"');
    expect(printed).toContain(
      'expect.steps["ask/tools/whoami"].request.headers.Authorization: expected "Bearer wrong", got "Bearer ***"',
    );
    expect(printed).not.toContain(TOKEN);
    expect(printed).not.toContain(btoa(TOKEN).replace(/=+$/, ""));
  });
});
