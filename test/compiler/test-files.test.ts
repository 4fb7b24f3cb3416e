/**
 * `*.test.yaml` files are checked by the build and `npm run validate` like workflow files: every
 * mistake is reported at its `file:line:col` (unknown workflow, unknown step paths in `mocks`
 * and `expect` with "did you mean", mock shapes per step type, params against params.schema,
 * env, error codes, JMESPath in `assert`), and schema/test.schema.json gives editors the same.
 */
import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { type Schema, Validator } from "@cfworker/json-schema";
import { afterAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { compileFiles, expectDiagnostic, GATEWAY, removeProjects, type TempProject } from "./temp-project.ts";

afterAll(removeProjects);

const WORKFLOW = `kind: workflow
name: t
params:
  schema: {type: object, required: [n], properties: {n: {type: integer}}}
env:
  - {name: TOKEN, secret: true}
invoke:
  auth: {secret: "{{ env.TOKEN }}"}
model_policy: {cost_budget_usd: 0.5}
pipeline:
  - id: ask
    agent: core/chat@1.0.0
    params: {prompt: hi}
  - id: shape
    transform: {ops: []}
  - id: notify
    workflow: child.yaml
    webhooks: execute
  - id: post-result
    webhook: {url: "https://x.example"}
`;
const CHILD = `kind: workflow
name: child
params: {schema: {type: object}}
pipeline:
  - id: post
    webhook: {url: "https://y.example"}
`;
const F = "tests/t.test.yaml";

function project(test: string): TempProject {
  return compileFiles({
    "gateway.yaml": GATEWAY,
    "t.workflow.yaml": WORKFLOW,
    "child.yaml": CHILD,
    [F]: test,
  });
}

/** A case of workflow `t` with valid params and env; `body` is indented under the case (4 spaces). */
const oneCase = (body: string) => `kind: test
workflow: t
cases:
  - name: one
    params: {n: 3}
    env: {TOKEN: token-12345}
${body}`;

describe("a valid test file", () => {
  it("compiles with the workflows, and is not part of the bundle", () => {
    const p = project(
      oneCase(`    mocks:
      ask: {output: {text: hi}, usage: {tokens_in: 10, tokens_out: 2}}
      notify/post: [{status: 503}, {status: 200, body: {ok: true}}]
      post-result: {status: 201}
    expect:
      status: complete
      error: null
      steps:
        notify/post: {status: complete}
      assert: ["step.post-result.status == \`201\`"]
`).replace("      error: null\n", ""),
    );
    expect(p.result.diagnostics.map((d) => d.text)).toEqual([]);
    expect(JSON.stringify(p.result.bundle)).not.toContain("test.yaml");
    const [suite] = p.result.tests;
    expect(suite?.workflowKey).toBe("t.workflow.yaml");
    expect(suite?.cases[0]?.mocks["notify/post"]).toEqual({
      kind: "webhook",
      tool: null,
      answers: [{ status: 503 }, { status: 200, body: { ok: true } }],
      repeat: false,
    });
    expect(suite?.cases[0]?.mocks.ask?.repeat).toBe(true);
    expect(suite?.cases[0]?.asserts).toEqual([
      { source: "step.post-result.status == `201`", expr: 'step."post-result".status == `201`', index: 0 },
    ]);
  });
});

describe("test file checks", () => {
  it("rejects an unknown workflow, with a hint", () => {
    const p = project("kind: test\nworkflow: tt\ncases:\n  - name: one\n");
    expectDiagnostic(p, "error", F, 2, 11, /^unknown workflow `tt`; did you mean `t`\?$/);
    expect(p.result.bundle).toBeNull();
  });

  it("names unknown step paths in mocks and expect, at the key, with a hint", () => {
    const p = project(
      oneCase(`    mocks:
      aks: {output: {text: hi}}
      notify/pots: {status: 200}
      shape/x: {status: 200}
    expect:
      error: {step: notify/psot}
      steps:
        post-reslt: {status: complete}
`),
    );
    expectDiagnostic(
      p,
      "error",
      F,
      8,
      7,
      /^mocks: `aks` is not a step of workflow `t`; did you mean `ask`\?$/,
    );
    expectDiagnostic(
      p,
      "error",
      F,
      9,
      7,
      /^mocks: `notify\/pots` is not a step of `notify` \(child\); did you mean `post`\?$/,
    );
    expectDiagnostic(
      p,
      "error",
      F,
      10,
      7,
      /^mocks: `shape` is a transform step: it has no steps inside \(`shape\/x`\)$/,
    );
    expectDiagnostic(
      p,
      "error",
      F,
      12,
      21,
      /^error\.step: `notify\/psot` is not a step of `notify` \(child\); did you mean `post`\?$/,
    );
    expectDiagnostic(
      p,
      "error",
      F,
      14,
      9,
      /^expect\.steps: `post-reslt` is not a step of workflow `t`; did you mean `post-result`\?$/,
    );
    expect(p.errors).toHaveLength(5);
  });

  it("mocks only webhook, agent and wait steps", () => {
    const p = project(
      oneCase(`    mocks:
      shape: {status: 200}
      notify: {status: 200}
    expect:
      steps:
        shape: {request: {}}
`),
    );
    expectDiagnostic(
      p,
      "error",
      F,
      8,
      7,
      /^mocks: `shape` is a transform step; only webhook, agent and wait steps are mocked/,
    );
    expectDiagnostic(p, "error", F, 9, 7, /mock the steps inside it, e\.g\. `notify\/STEP`\)$/);
    expectDiagnostic(
      p,
      "error",
      F,
      12,
      17,
      /^expect\.steps: `shape` is a transform step; only webhook and agent steps send requests$/,
    );
  });

  it("checks each mock's shape against its step's type", () => {
    const p = project(
      oneCase(`    mocks:
      post-result: {output: {}}
      notify/post: {error: reset, status: 500}
      ask: [{output: {text: a}, status: 500}, {}, {status: 200}, {output: {txt: b}}, {status: 503, usage: {tokens_in: 1}}]
`),
    );
    expectDiagnostic(
      p,
      "error",
      F,
      8,
      21,
      /^`output` does not belong in a mock of webhook step `post-result`; it takes `status`, `headers`, `body`, `delay_s`, `error`$/,
    );
    expectDiagnostic(p, "error", F, 9, 35, /^a mock with `error` \(a network error\) has no `status`$/);
    expectDiagnostic(
      p,
      "error",
      F,
      10,
      13,
      /^a mock of agent step `ask` has `output` and `status`; give exactly one$/,
    );
    expectDiagnostic(p, "error", F, 10, 47, /^a mock of agent step `ask` needs one of `output`/);
    expectDiagnostic(
      p,
      "error",
      F,
      10,
      60,
      /^an agent mock's `status` is a provider's HTTP error \(400 to 599\)/,
    );
    expectDiagnostic(
      p,
      "error",
      F,
      10,
      75,
      /^`core\/chat@1\.0\.0` outputs `\{text: "…"\}`: the mock's output needs a string `text`$/,
    );
    expectDiagnostic(
      p,
      "error",
      F,
      10,
      100,
      /^`usage` belongs to an answer \(`output`, `reply` or `tool_calls`\)$/,
    );
  });

  it("warns when an agent mock's output does not match the agent's output schema", () => {
    const p = compileFiles({
      "gateway.yaml": GATEWAY,
      "a.workflow.yaml": `kind: workflow
name: a
params: {schema: {type: object}}
model_policy: {cost_budget_usd: 0.5}
pipeline:
  - id: pick
    agent: core/classify@1.0.0
    params: {text: x, labels: [a, b]}
`,
      "tests/a.test.yaml":
        "kind: test\nworkflow: a\ncases:\n  - name: one\n    mocks:\n      pick: {output: {label: 3}}\n",
    });
    expectDiagnostic(
      p,
      "warning",
      "tests/a.test.yaml",
      6,
      22,
      /^the mock's output does not match agent `classify`'s output\.schema \(\/label: /,
    );
  });

  it("checks params against the workflow's params.schema, at the offending value", () => {
    const p = project(`kind: test
workflow: t
cases:
  - name: one
    params: {n: "three"}
    env: {TOKEN: token-12345}
  - name: two
    env: {TOKEN: token-12345}
`);
    expectDiagnostic(
      p,
      "error",
      F,
      5,
      17,
      /^params do not match `t`'s params\.schema: \/n: Instance type "string" is invalid\. Expected "integer"\.$/,
    );
    expectDiagnostic(
      p,
      "error",
      F,
      7,
      5,
      /^params do not match `t`'s params\.schema: \/: Instance does not have required property "n"\.$/,
    );
  });

  it("checks a batch workflow's case params as its run gets them: items, each against params.schema", () => {
    const p = compileFiles({
      "b.workflow.yaml": `kind: workflow
name: b
params: {schema: {type: object, required: [n], properties: {n: {type: integer}}}}
invoke: {batch: {max_items: 10}}
pipeline:
  - id: s
    transform: {inputs: [{from: "{{ params.items }}"}]}
`,
      "tests/b.test.yaml": `kind: test
workflow: b
cases:
  - name: one
    params: {items: [{n: 1}, {n: "two"}]}
`,
    });
    expect(p.errors.map((e) => e.message)).toEqual([
      'params do not match `b`\'s params.schema: /items/1/n: Instance type "string" is invalid. Expected "integer".',
    ]);
    expectDiagnostic(
      p,
      "error",
      "tests/b.test.yaml",
      5,
      34,
      /^params do not match `b`'s params\.schema: \/items\/1\/n/,
    );
  });

  it("rejects a secret the Worker would refuse, warns on an env name the run cannot read", () => {
    const p = project(`kind: test
workflow: t
cases:
  - name: one
    params: {n: 1}
    env: {TOKEN: abc12, TOKEM: x, ALLOW_PRIVATE_WEBHOOKS: "true"}
`);
    expectDiagnostic(
      p,
      "error",
      F,
      6,
      18,
      /^`TOKEN` is a secret shorter than 8 characters; the Worker would refuse the run \(500 server_misconfigured\)$/,
    );
    expectDiagnostic(
      p,
      "warning",
      F,
      6,
      25,
      /^`TOKEM` is not declared by `t` or gateway\.yaml: the run cannot read it; did you mean `TOKEN`\?$/,
    );
    expect(p.warnings).toHaveLength(1);
    expect(p.result.diagnostics.map((d) => d.text).join("\n")).not.toContain("abc12");
  });

  it("checks error codes, assert expressions and field names", () => {
    const p = project(
      oneCase(`    mock: {}
    expect:
      error: webhook_faild
      steps:
        notify/post: {error: {code: timout, step: x}}
      assert: ["step.ask.text ==", "stpe.ask", "step.ak.text"]
`),
    );
    expectDiagnostic(p, "error", F, 7, 5, /^unknown field `cases\[0\]\.mock`; did you mean `mocks`\?$/);
    expectDiagnostic(
      p,
      "error",
      F,
      9,
      14,
      /^unknown error code `webhook_faild`; did you mean `webhook_failed`\?$/,
    );
    expectDiagnostic(p, "error", F, 11, 37, /^unknown error code `timout`; did you mean `timeout`\?$/);
    expectDiagnostic(
      p,
      "error",
      F,
      11,
      45,
      /^a step's error has `code` and `message`; `step` is on the run's error$/,
    );
    expectDiagnostic(p, "error", F, 12, 16, /^invalid JMESPath in `assert`: /);
    expectDiagnostic(
      p,
      "error",
      F,
      12,
      36,
      /^`assert` reads `stpe`, which is always null: .*; did you mean `step`\?$/,
    );
    expectDiagnostic(
      p,
      "error",
      F,
      12,
      48,
      /^`assert` reads `step\.ak`, which is not a step of `t`; did you mean `ask`\?$/,
    );
  });

  it("rejects duplicate case names", () => {
    const p = project(`kind: test
workflow: t
cases:
  - {name: one, params: {n: 1}}
  - {name: one, params: {n: 2}}
`);
    expectDiagnostic(p, "error", F, 5, 12, /^duplicate case name `one` \(also case #1, line 4\)$/);
  });

  it("warns about a webhook mock inside a sub-workflow whose webhooks are suppressed", () => {
    const p = compileFiles({
      "gateway.yaml": GATEWAY,
      "t.workflow.yaml": WORKFLOW.replace("    webhooks: execute\n", ""),
      "child.yaml": CHILD,
      [F]: oneCase("    mocks:\n      notify/post: {status: 200}\n"),
    });
    expectDiagnostic(
      p,
      "warning",
      F,
      8,
      7,
      /^mocks: `notify\/post` never runs: webhooks inside `notify` are suppressed \(give that workflow step `webhooks: execute` to run them\)$/,
    );
    expect(p.errors).toEqual([]);
  });

  it("checks request headers against invoke.headers, and response against invoke.response", () => {
    const p = compileFiles({
      "h.workflow.yaml": `kind: workflow
name: h
params: {schema: {type: object}}
env:
  - {name: TOKEN, secret: true}
invoke:
  auth: {secret: "{{ env.TOKEN }}"}
  headers: [X-Event]
pipeline:
  - id: a
    transform: {inputs: [{from: "{{ request.headers.x_event }}"}]}
`,
      "tests/h.test.yaml": `kind: test
workflow: h
cases:
  - name: one
    env: {TOKEN: token-12345}
    request: {headers: {x-event: push, X-Evnet: typo}}
    expect:
      response: {status: 200}
`,
    });
    expectDiagnostic(
      p,
      "error",
      "tests/h.test.yaml",
      6,
      40,
      /^header `X-Evnet` is not in `h`'s `invoke\.headers`; did you mean `x-event`\?$/,
    );
    expectDiagnostic(
      p,
      "error",
      "tests/h.test.yaml",
      8,
      7,
      /^workflow `h` has no `invoke\.response`: its invoke answers with the run$/,
    );
    expect(p.errors).toHaveLength(2);
  });

  it("warns that request headers have no effect when the workflow records none", () => {
    const p = project(oneCase("    request: {headers: {X-Event: push}}\n"));
    expectDiagnostic(
      p,
      "warning",
      F,
      7,
      15,
      /^`request\.headers` has no effect: workflow `t` records no request headers$/,
    );
  });
});

describe("tool and approval keys", () => {
  const TOOLS_WORKFLOW = `kind: workflow
name: w
params: {schema: {type: object}}
model_policy: {cost_budget_usd: 0.5}
pipeline:
  - id: ask
    agent: core/chat@1.0.0
    params: {prompt: hi}
  - id: risk
    agent: agents/calc.agent.yaml
    params: {url: "https://calc.example/mcp"}
  - id: each
    agent: agents/calc.agent.yaml
    for_each: {from: "\`[1, 2]\`"}
    params: {url: "https://calc.example/mcp"}
`;
  const AGENT = `name: calc
model: economy
params: {schema: {type: object, properties: {url: {type: string}}}}
servers:
  - name: calc
    path: ../servers/calc.server.yaml
    params: {url: "{{ params.url }}"}
    access:
      allowlist:
        - get-sum
        - echo
        - {name: delete-record, require_approval: {timeout: 1h}}
        - {name: archive-*, require_approval: {on_reject: recover}}
output: {schema: {type: object}}
`;
  const SERVER = `name: calc
url: "{{ params.url }}"
params: {url: {}}
`;
  const tools = (test: string) =>
    compileFiles({
      "gateway.yaml": GATEWAY,
      "w.workflow.yaml": TOOLS_WORKFLOW,
      "agents/calc.agent.yaml": AGENT,
      "servers/calc.server.yaml": SERVER,
      [F]: test,
    });

  it("accepts tool mocks, scripted tool turns and decisions, and keeps them for the runner", () => {
    const p = tools(`kind: test
workflow: w
cases:
  - name: ok
    mocks:
      ask: {output: {text: hi}}
      risk:
        - tool_calls: [{name: get-sum, arguments: {a: 1, b: 2}}, {name: archive-old}]
        - output: {n: 3}
      risk/tools/get-sum: [{result: {sum: 3}}, {content: [{type: text, text: "3"}], structuredContent: {sum: 3}}]
      each/tools/echo: {text: hi, isError: true}
      each/1/tools/echo: {error: reset, delay_s: 2}
      each: {output: {}}
    approvals:
      risk/tools/archive-old: [rejected, {decision: approved, comment: ok, after_s: 60}]
      each/0/tools/delete-record: timeout
      risk/needs_human: approved
    expect:
      steps:
        risk: {tool_calls: [{name: get-sum}], annotations: null, metrics: {tool_calls: 1}}
        risk/tools/get-sum: {request: {arguments: {a: 1}}, requests: []}
        each/1/tools/echo: {requests: []}
      assert: ["approvals[0].status == 'rejected'"]
`);
    expect(p.result.diagnostics.filter((d) => d.file.endsWith(F)).map((d) => d.text)).toEqual([]);
    const tc = p.result.tests[0]?.cases[0];
    expect(tc?.mocks["risk/tools/get-sum"]).toMatchObject({ kind: "tool", tool: "get-sum", repeat: false });
    expect(tc?.mocks["each/1/tools/echo"]).toMatchObject({ kind: "tool", tool: "echo", repeat: true });
    expect(tc?.approvals).toEqual({
      "risk/tools/archive-old": {
        decisions: [
          { decision: "rejected", comment: null, after_s: 0 },
          { decision: "approved", comment: "ok", after_s: 60 },
        ],
        repeat: false,
      },
      "each/0/tools/delete-record": {
        decisions: [{ decision: "timeout", comment: null, after_s: 0 }],
        repeat: true,
      },
      "risk/needs_human": { decisions: [{ decision: "approved", comment: null, after_s: 0 }], repeat: true },
    });
    expect(tc?.toolPaths).toEqual(["risk/tools/get-sum", "each/1/tools/echo"]);
  });

  it("names tools the allowlist never lets through, with a hint from its exact names", () => {
    const p = tools(`kind: test
workflow: w
cases:
  - name: keys
    mocks:
      ask/tools/get-sum: {text: x}
      risk/tools/get-summ: {text: x}
      risk/needs_human: {output: {}}
    approvals:
      risk: approved
      risk/tools/get-sum: approved
      risk/tools/delete-recrd: approved
    expect:
      steps:
        risk/tools/echoo: {requests: []}
`);
    expectDiagnostic(
      p,
      "error",
      F,
      6,
      7,
      /^mocks: agent step `ask` has no tool servers, so it makes no tool calls$/,
    );
    expectDiagnostic(
      p,
      "error",
      F,
      7,
      7,
      /^mocks: `get-summ` is not allowed by the allowlists of agent `calc` \(calc: get-sum, echo, delete-record, archive-\*\): the model is never offered it; did you mean `get-sum`\?$/,
    );
    expectDiagnostic(
      p,
      "error",
      F,
      8,
      7,
      /^mocks: `risk\/needs_human` is a human's decision: give it under the case's `approvals` \(approved, rejected or timeout\)$/,
    );
    expectDiagnostic(
      p,
      "error",
      F,
      10,
      7,
      /^approvals: `risk` is a step; an approval is asked by a gated tool call \(`risk\/tools\/TOOL`\) or by an agent's output for review \(`risk\/needs_human`\)$/,
    );
    expectDiagnostic(
      p,
      "error",
      F,
      11,
      7,
      /^approvals: `get-sum` has no `require_approval` \(allowlist entry `get-sum` of server `calc`\): its calls are made without asking$/,
    );
    expectDiagnostic(
      p,
      "error",
      F,
      12,
      7,
      /^approvals: `delete-recrd` is not allowed .*; did you mean `delete-record`\?$/,
    );
    expectDiagnostic(
      p,
      "error",
      F,
      15,
      9,
      /^expect\.steps: `echoo` is not allowed .*; did you mean `echo`\?$/,
    );
    expect(p.errors).toHaveLength(7);
  });

  it("checks the shape of tool mocks, scripted turns and decisions", () => {
    const p = tools(`kind: test
workflow: w
cases:
  - name: shapes
    mocks:
      ask: {tool_calls: [{name: get-sum}]}
      risk:
        - tool_calls: [{name: delet-record}]
        - {output: {}, tool_calls: [{name: echo}]}
      risk/tools/get-sum: {status: 200}
      risk/tools/echo: {text: a, result: b}
      risk/tools/archive-x: {result: {}, isError: true}
    approvals:
      risk/tools/delete-record: {decision: maybe}
      risk/needs_human: timeout
    expect:
      steps:
        risk/tools/echo: {status: complete}
        each/tools/echo: {requests: []}
        risk/needs_human: {status: complete}
        post: {tool_calls: []}
`);
    expectDiagnostic(
      p,
      "error",
      F,
      6,
      13,
      /^agent `chat` has no tool servers: its model is offered no tools$/,
    );
    expectDiagnostic(
      p,
      "warning",
      F,
      8,
      31,
      /^`delet-record` is not allowed .*; did you mean `delete-record`\?; calling it fails the step `tool_not_permitted`$/,
    );
    expectDiagnostic(
      p,
      "error",
      F,
      9,
      11,
      /^a mock of agent step `risk` has `output` and `tool_calls`; give exactly one$/,
    );
    expectDiagnostic(p, "error", F, 10, 28, /^`status` does not belong in a tool mock; it takes `content`, /);
    expectDiagnostic(p, "error", F, 10, 27, /^a tool mock needs one of `text` \(a text result\), `result` /);
    expectDiagnostic(p, "error", F, 11, 24, /^a tool mock has `text` and `result`; give exactly one$/);
    expectDiagnostic(p, "error", F, 12, 42, /^`isError` goes with `text` or `content`/);
    expectDiagnostic(
      p,
      "error",
      F,
      14,
      44,
      /^`cases\[0\]\.approvals\.risk\/tools\/delete-record\.decision` must be one of `approved`, `rejected`, `timeout`, got `maybe`$/,
    );
    expectDiagnostic(
      p,
      "warning",
      F,
      15,
      25,
      /^`risk\/needs_human` has no timeout of its own: `timeout` waits for the run's deadline, and the run fails `timeout`$/,
    );
    expectDiagnostic(
      p,
      "error",
      F,
      18,
      27,
      /^expect\.steps: `risk\/tools\/echo` is a tool call: it has `request` \(the last call: \{server, url, headers, name, arguments\}\) and `requests` \(every call\); the step `risk` has the rest \(`tool_calls`\)$/,
    );
    expectDiagnostic(
      p,
      "error",
      F,
      19,
      9,
      /^expect\.steps: `each` fans out: name the item whose calls you expect \(`each\/0\/tools\/echo`\)$/,
    );
    expectDiagnostic(
      p,
      "error",
      F,
      20,
      9,
      /^expect\.steps: `risk\/needs_human` is a human's decision, not a step/,
    );
    expectDiagnostic(p, "error", F, 21, 9, /^expect\.steps: `post` is not a step of workflow `w`/);
  });

  it("does not warn about a refused tool in a case that expects the refusal", () => {
    const p = tools(`kind: test
workflow: w
cases:
  - name: refused
    mocks:
      ask: {output: {text: hi}}
      risk: {tool_calls: [{name: drop-table}]}
    expect: {error: tool_not_permitted}
`);
    expect(p.result.diagnostics.filter((d) => d.file.endsWith(F)).map((d) => d.text)).toEqual([]);
  });
});

describe("schema/test.schema.json", () => {
  const root = fileURLToPath(new URL("../..", import.meta.url));
  const schema = JSON.parse(readFileSync(`${root}schema/test.schema.json`, "utf8")) as Schema;
  const meta = JSON.parse(readFileSync(`${root}schema/json-schema-2020-12.meta.json`, "utf8")) as Schema;
  const editor = new Validator(schema, "2020-12", false);

  it("is a valid draft 2020-12 JSON Schema", () => {
    expect(new Validator(meta, "2020-12", false).validate(schema).errors).toEqual([]);
  });

  it("accepts every example test file as an editor would, and flags a typo", () => {
    const files = readdirSync(`${root}workflows/tests`).filter((f) => f.endsWith(".test.yaml"));
    expect(files.length).toBeGreaterThan(0);
    for (const f of files) {
      const doc = parse(readFileSync(`${root}workflows/tests/${f}`, "utf8"));
      expect(editor.validate(doc).valid, f).toBe(true);
    }
    const doc = parse(readFileSync(`${root}workflows/tests/hello.test.yaml`, "utf8"));
    doc.cases[0].expcet = doc.cases[0].expect;
    expect(editor.validate(doc).valid).toBe(false);
  });
});
