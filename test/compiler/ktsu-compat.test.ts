/**
 * ktsu files compile unchanged (docs/file-format.md, last paragraph of "Workflow step"): ktsu's own
 * example files (copied byte for byte into fixtures/ktsu-examples, see its SOURCE.md) build, with
 * the semantics the docs give: top-level `webhooks:` on sub-workflow files, namespaced names for
 * files that are not invocable, `output.schema` on every step type, `env:NAME` read as
 * `{{ env.NAME }}` (with a warning), and ktsu's `from: input`. What is really wrong stays an error.
 */
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import type { CompiledWorkflow, WebhookStep, WorkflowStep } from "../../src/bundle.ts";
import { compileProject } from "../../src/compiler/index.ts";
import {
  compileFiles,
  expectDiagnostic,
  expectOnlyError,
  GATEWAY,
  HEAD,
  removeProjects,
} from "./temp-project.ts";

afterAll(removeProjects);

const EXAMPLES = fileURLToPath(new URL("./fixtures/ktsu-examples", import.meta.url));
const T = "t.workflow.yaml";
const CHILD_HEAD = "kind: workflow\nname: child\nparams:\n  schema: {type: object}\npipeline:\n";

describe("ktsu's example files", () => {
  const result = compileProject(EXAMPLES);
  const byName = (name: string): CompiledWorkflow => {
    const wf = Object.values(result.bundle?.workflows ?? {}).find((w) => w.name === name);
    if (!wf) throw new Error(`no workflow ${name}`);
    return wf;
  };
  const messages = (file: string) =>
    result.diagnostics.filter((d) => d.file.endsWith(file)).map((d) => `${d.line}:${d.col}: ${d.message}`);

  it("compile without errors", () => {
    expect(result.diagnostics.filter((d) => d.severity === "error")).toEqual([]);
    expect(result.bundle).not.toBeNull();
  });

  it("keep their namespaced names and top-level webhooks", () => {
    expect(byName("ktsu/slack-input").webhooks).toBe("suppress");
    expect(byName("ktsu/slack-reply").webhooks).toBe("execute");
    // Sub-workflows only: they are not invocable.
    expect(Object.keys(result.bundle?.invocable ?? {}).sort()).toEqual(["hello", "slack-bot"]);
  });

  it("keep output.schema on a webhook step", () => {
    const post = byName("ktsu/slack-reply").steps[0] as WebhookStep;
    expect(post.outputSchema).toMatchObject({ type: "object", properties: { sent: { type: "boolean" } } });
  });

  it("read env:NAME as {{ env.NAME }}, in invoke.auth.secret and in a step's values, with a warning each", () => {
    const bot = byName("slack-bot");
    expect(bot.auth).toEqual({ header: "x-bot-token", scheme: "raw", secretEnvs: ["SLACK_BOT_TOKEN"] });
    const reply = bot.steps[1] as WorkflowStep;
    expect(reply.input).toMatchObject({
      t: "obj",
      entries: expect.arrayContaining([["webhook_url", { t: "expr", e: "env.SLACK_WEBHOOK_URL" }]]),
    });
    expect(messages("slack-bot.workflow.yaml")).toEqual([
      "17:13: `env:SLACK_BOT_TOKEN` is ktsu's shorthand and is read as `{{ env.SLACK_BOT_TOKEN }}`; write `{{ env.SLACK_BOT_TOKEN }}`",
      "28:23: `env:SLACK_SIGNING_SECRET` is ktsu's shorthand and is read as `{{ env.SLACK_SIGNING_SECRET }}`; write `{{ env.SLACK_SIGNING_SECRET }}`",
      "35:20: `env:SLACK_WEBHOOK_URL` is ktsu's shorthand and is read as `{{ env.SLACK_WEBHOOK_URL }}`; write `{{ env.SLACK_WEBHOOK_URL }}`",
    ]);
  });

  it("read ktsu's `from: input` as the workflow's input, and warn about a url that is not http(s)", () => {
    expect(byName("ktsu/slack-input").steps[0]).toMatchObject({ inputs: [{ t: "expr", e: "params" }] });
    expect(messages("ktsu-slack-input.workflow.yaml")).toEqual([
      "22:17: step `validate`: `from: input` (ktsu's form) reads this workflow's input; write `from: \"{{ params }}\"`",
    ]);
    expect(messages("ktsu-slack-reply.workflow.yaml")).toEqual([
      "24:12: step `post`: the url `param:webhook_url` is not an http(s) URL, so the step fails whenever it runs; ktsu's `param:NAME` is not read here: write `{{ params.webhook_url }}`",
    ]);
  });
});

describe("namespaced names", () => {
  it("are an error on an invocable workflow: its name is the {name} of /invoke/{name}", () => {
    const p = compileFiles({
      [T]: `${HEAD.replace("name: t", "name: acme/t")}  - id: a\n    transform: {ops: []}\n`,
    });
    expectOnlyError(
      p,
      T,
      2,
      7,
      /^the name `acme\/t` has a `\/`: only files used as sub-workflows may have a namespaced name/,
    );
  });

  it("still reject characters outside the name pattern", () => {
    const p = compileFiles({
      [T]: `${HEAD}  - id: a\n    workflow: ./sub/child.yaml\n`,
      "sub/child.yaml": `${CHILD_HEAD.replace("name: child", "name: acme//child")}  - id: x\n    transform: {ops: []}\n`,
    });
    expectOnlyError(p, "sub/child.yaml", 2, 7, /^`name` must start with a letter or digit/);
  });
});

describe("top-level webhooks", () => {
  it("warns when a step says execute but the sub-workflow file says suppress", () => {
    const p = compileFiles({
      [T]: `${HEAD}  - id: a\n    workflow: ./child.yaml\n    webhooks: execute\n`,
      "child.yaml": `${CHILD_HEAD}  - id: x\n    transform: {ops: []}\nwebhooks: suppress\n`,
    });
    expect(p.errors).toEqual([]);
    expectDiagnostic(
      p,
      "warning",
      T,
      12,
      15,
      /^step `a` says `webhooks: execute`, but `child.yaml` declares `webhooks: suppress`: its webhook steps are always skipped$/,
    );
  });

  it("rejects a value other than execute or suppress", () => {
    const p = compileFiles({
      [T]: `${HEAD}  - id: a\n    workflow: ./child.yaml\n`,
      "child.yaml": `${CHILD_HEAD}  - id: x\n    transform: {ops: []}\nwebhooks: always\n`,
    });
    expectOnlyError(p, "child.yaml", 8, 11, /^`webhooks` must be one of `execute`, `suppress`, got `always`/);
  });
});

describe("output.schema on every step type", () => {
  it("is accepted on agent, webhook and workflow steps and lands in the bundle", () => {
    const p = compileFiles({
      "gateway.yaml": GATEWAY,
      [T]: `${HEAD}  - id: ask
    agent: core/chat@1.0.0
    params: {prompt: hi}
    output: {schema: {type: object, required: [text]}}
  - id: post
    webhook: {url: "https://example.com"}
    output: {schema: {type: object, properties: {status: {const: 200}}}}
  - id: sub
    workflow: ./child.yaml
    output: {schema: {type: object}}
model_policy: {cost_budget_usd: 1}
`,
      "child.yaml": `${CHILD_HEAD}  - id: x\n    transform: {ops: []}\n`,
    });
    expect(p.errors).toEqual([]);
    const steps = p.result.bundle?.workflows[T]?.steps ?? [];
    expect(steps.map((s) => s.outputSchema)).toEqual([
      { type: "object", required: ["text"] },
      { type: "object", properties: { status: { const: 200 } } },
      { type: "object" },
    ]);
  });

  it("is still checked as JSON Schema on a webhook step", () => {
    const p = compileFiles({
      [T]: `${HEAD}  - id: post\n    webhook: {url: "https://example.com"}\n    output: {schema: {type: object, minProperties: -1}}\n`,
    });
    expectOnlyError(p, T, 12, 52, /^output\.schema: `minProperties` is not valid JSON Schema/);
  });

  it("gives the warning on unknown fields the step's own schema", () => {
    const p = compileFiles({
      [T]: `${HEAD}  - id: sub
    workflow: ./child.yaml
    output: {schema: {type: object, properties: {ok: {type: boolean}}, additionalProperties: false}}
  - id: after
    transform: {inputs: [{from: "{{ step.sub.okay }}"}]}
`,
      "child.yaml": `${CHILD_HEAD}  - id: x\n    transform: {ops: []}\n`,
    });
    expectDiagnostic(
      p,
      "warning",
      T,
      14,
      33,
      /^`step\.sub\.okay` is always null: the output of step `sub` has no field `okay` here \(known: `ok`\)$/,
    );
  });
});

describe("env:NAME", () => {
  it("is read as {{ env.NAME }} in webhook headers and sign.secret", () => {
    const p = compileFiles({
      [T]: `${HEAD.replace("  - {name: TOKEN, secret: true}\n", "  - {name: TOKEN, secret: true}\n  - {name: SIGN, secret: true}\n")}  - id: post
    webhook:
      url: "https://example.com"
      headers: {Authorization: "env:TOKEN"}
      sign: {secret: "env:SIGN"}
`,
    });
    expect(p.errors).toEqual([]);
    const post = p.result.bundle?.workflows[T]?.steps[0] as WebhookStep;
    expect(post.headers).toEqual({ t: "obj", entries: [["Authorization", { t: "expr", e: "env.TOKEN" }]] });
    expect(post.sign).toEqual({ secretEnv: "SIGN" });
    expectDiagnostic(p, "warning", T, 14, 32, /^`env:TOKEN` is ktsu's shorthand/);
    expectDiagnostic(p, "warning", T, 15, 22, /^`env:SIGN` is ktsu's shorthand/);
  });

  it("stays literal text with a warning when NAME is not declared, and in a sub-workflow", () => {
    const p = compileFiles({
      [T]: `${HEAD}  - id: post\n    webhook: {url: "https://example.com", body: {k: "env:NOPE"}}\n  - id: sub\n    workflow: ./child.yaml\n`,
      "child.yaml": `${CHILD_HEAD}  - id: x\n    webhook: {url: "https://example.com", body: {k: "env:TOKEN"}}\n`,
    });
    expect(p.errors).toEqual([]);
    expect((p.result.bundle?.workflows[T]?.steps[0] as WebhookStep | undefined)?.body).toEqual({
      t: "lit",
      v: { k: "env:NOPE" },
    });
    expectDiagnostic(
      p,
      "warning",
      T,
      11,
      53,
      /^`env:NOPE` is sent as the literal text: `NOPE` is not declared in `env`/,
    );
    expectDiagnostic(
      p,
      "warning",
      "child.yaml",
      7,
      53,
      /^`env:TOKEN` is sent as the literal text: only root workflows read env/,
    );
  });

  it("in invoke.auth.secret must still name a declared env var", () => {
    const p = compileFiles({
      [T]: `${HEAD.replace("{{ env.TOKEN }}", "env:TOKN")}  - id: a\n    transform: {ops: []}\n`,
    });
    expectOnlyError(p, T, 6, 18, /^`env\.TOKN` is not declared in `env`; did you mean `TOKEN`\?$/);
    expect(p.warnings.filter((w) => /TOKN/.test(w.message))).toEqual([]);
  });

  it("is only the whole string: text around it stays a literal", () => {
    const p = compileFiles({
      [T]: `${HEAD}  - id: post\n    webhook: {url: "https://example.com", body: {k: "x env:TOKEN"}}\n`,
    });
    expect(p.warnings.filter((w) => /env:TOKEN/.test(w.message))).toEqual([]);
    expect((p.result.bundle?.workflows[T]?.steps[0] as WebhookStep | undefined)?.body).toEqual({
      t: "lit",
      v: { k: "x env:TOKEN" },
    });
  });
});
