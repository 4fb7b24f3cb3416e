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

  it("mocks only webhook and agent steps", () => {
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
      /^mocks: `shape` is a transform step; only webhook and agent steps are mocked/,
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
