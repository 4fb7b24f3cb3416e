/**
 * One test per build check of docs/file-format.md on workflow files: each writes a small project,
 * and asserts the exact `file:line:col` the user is sent to and the gist of the message.
 */
import { afterAll, describe, expect, it } from "vitest";
import { STEP_KINDS } from "../../src/bundle.ts";
import {
  compileFiles,
  expectDiagnostic,
  expectOnlyError,
  GATEWAY,
  HEAD,
  removeProjects,
} from "./temp-project.ts";

afterAll(removeProjects);

const T = "t.workflow.yaml";
const step = `  - id: a
    transform: {ops: []}
`;

describe("top-level fields", () => {
  it("rejects an unknown top-level field and suggests the intended one", () => {
    const p = compileFiles({ [T]: `${HEAD}${step}descripton: hi\n` });
    expectOnlyError(p, T, 12, 1, /^unknown field `descripton`; did you mean `description`\?$/);
  });

  it("rejects a kind other than workflow", () => {
    const p = compileFiles({ [T]: HEAD.replace("kind: workflow", "kind: workfow") + step });
    expectOnlyError(p, T, 1, 7, /^`kind` must be `workflow`, got `workfow`/);
  });

  it("reports each missing required field (name, params, pipeline)", () => {
    const p = compileFiles({ [T]: "kind: workflow\n" });
    expectDiagnostic(p, "error", T, 1, 1, /^missing required field `name`$/);
    expectDiagnostic(p, "error", T, 1, 1, /^missing required field `params`$/);
    expectDiagnostic(p, "error", T, 1, 1, /^missing required field `pipeline`$/);
  });

  it("reports a params block without schema", () => {
    const p = compileFiles({
      [T]: HEAD.replace("  schema: {type: object}", "  schemas: {type: object}") + step,
    });
    expectDiagnostic(p, "error", T, 4, 3, /^missing required field `params.schema`$/);
  });

  it("rejects two workflows with the same name", () => {
    const p = compileFiles({ "a.workflow.yaml": HEAD + step, "b.workflow.yaml": HEAD + step });
    expectOnlyError(
      p,
      "b.workflow.yaml",
      2,
      7,
      /^duplicate workflow name `t` \(also in `a.workflow.yaml`\)$/,
    );
  });

  it("rejects a version that is not semver", () => {
    const p = compileFiles({ [T]: `${HEAD}${step}version: v1.2\n` });
    expectOnlyError(p, T, 12, 10, /^`version` must be a semver string such as `1.2.0`, got `v1.2`$/);
  });

  it("explains that an unquoted version like 1.0 is read as a number", () => {
    const p = compileFiles({ [T]: `${HEAD}${step}version: 1.0\n` });
    expectOnlyError(
      p,
      T,
      12,
      10,
      /^`version` must be a semver string such as `1\.2\.0` \(quote it: `version: "1\.0\.0"`\), got an integer \(1\)$/,
    );
  });

  it("reports a YAML syntax error at its position and keeps checking other files", () => {
    const p = compileFiles({
      [T]: `${HEAD}  - id: a\n    transform: {ops: [}\n`,
      "u.workflow.yaml": `${HEAD}${step}kindd: x\n`,
    });
    expectDiagnostic(p, "error", T, 11, 23, /^YAML: /);
    expectDiagnostic(p, "error", "u.workflow.yaml", 12, 1, /^unknown field `kindd`; did you mean `kind`\?$/);
  });

  it("reports a key that is not text or a number (a mapping, a list, binary data) at its position, and Node prints no warning", async () => {
    const warnings: Error[] = [];
    const onWarning = (w: Error) => warnings.push(w);
    process.on("warning", onWarning);
    try {
      const p = compileFiles({
        [T]: `${HEAD}${step}? [a, b]\n: 1\n{ops: x}: 2\nx: &k {a: 1}\n*k : 3\n!!binary aGVsbG8= : 4\n`,
      });
      // `? [a, b]`, `{ops: x}`, the alias `*k` of a mapping, and `!!binary` bytes (at their value).
      for (const [line, col] of [
        [12, 3],
        [14, 1],
        [16, 1],
        [17, 10],
      ] as const) {
        expectDiagnostic(
          p,
          "error",
          T,
          line,
          col,
          /^YAML: a key must be text or a number, not a mapping, a list, binary data or a date$/,
        );
      }
      await new Promise((r) => setTimeout(r, 10)); // process warnings are emitted on a later tick
      expect(warnings.map((w) => w.message)).toEqual([]);
    } finally {
      process.off("warning", onWarning);
    }
  });

  it("rejects a visibility other than root or sub-workflow", () => {
    const p = compileFiles({ [T]: `${HEAD}${step}visibility: private\n` });
    expectOnlyError(p, T, 12, 13, /^`visibility` must be one of `root`, `sub-workflow`, got `private`$/);
  });

  it("rejects an invalid JSON Schema in params.schema and suggests the type", () => {
    const p = compileFiles({
      [T]:
        HEAD.replace(
          "  schema: {type: object}",
          "  schema:\n    type: object\n    properties:\n      name: {type: strnig}",
        ) + step,
    });
    expectOnlyError(
      p,
      T,
      7,
      20,
      /^params\.schema: `properties\.name\.type` `strnig` is not a JSON Schema type .*did you mean `string`\?$/,
    );
  });

  it("rejects an invalid JSON Schema in a transform's output.schema", () => {
    const p = compileFiles({
      [T]: `${HEAD}  - id: a\n    transform: {ops: []}\n    output:\n      schema: {type: array, minItems: -1}\n`,
    });
    expectOnlyError(p, T, 13, 39, /^output\.schema: `minItems` is not valid JSON Schema/);
  });

  it("rejects a timeout_s outside (0, 86400]", () => {
    const p = compileFiles({ [T]: `${HEAD}${step}model_policy:\n  timeout_s: 0\n` });
    expectOnlyError(p, T, 13, 14, /^`model_policy\.timeout_s` must be a number in \(0, 86400\], got 0$/);
  });

  it("rejects a cost_budget_usd that is not positive", () => {
    const p = compileFiles({ [T]: `${HEAD}${step}model_policy:\n  cost_budget_usd: -1\n` });
    expectOnlyError(p, T, 13, 20, /^`model_policy\.cost_budget_usd` must be a positive number, got -1$/);
  });

  it("rejects more than 200 steps in one workflow", () => {
    const steps = Array.from({ length: 201 }, (_, i) => `  - id: s${i}\n    transform: {ops: []}\n`).join("");
    const p = compileFiles({ [T]: HEAD + steps });
    expectOnlyError(p, T, 9, 1, /^the pipeline has 201 steps; the limit is 200 per workflow/);
  });
});

describe("steps", () => {
  it("rejects an unknown step field and suggests the intended one", () => {
    const p = compileFiles({
      [T]: `${HEAD}${step}  - id: b\n    dependson: [a]\n    transform: {ops: []}\n`,
    });
    expectOnlyError(p, T, 13, 5, /^step `b`: unknown field `dependson`; did you mean `depends_on`\?$/);
  });

  it("rejects a duplicate step id", () => {
    const p = compileFiles({ [T]: `${HEAD}${step}${step}` });
    expectOnlyError(p, T, 12, 9, /^duplicate step id `a` \(also step #1, line 10\)$/);
  });

  it("rejects a step with no step kind, naming every kind it could have", () => {
    const p = compileFiles({ [T]: `${HEAD}  - id: a\n    condition: "params.x"\n` });
    const kinds = STEP_KINDS.map((k) => `\`${k}\``).join(", ");
    expectOnlyError(p, T, 10, 5, new RegExp(`^step \`a\` needs exactly one of ${kinds}$`));
  });

  it("rejects a step with two step types", () => {
    const p = compileFiles({
      [T]: `${HEAD}  - id: a\n    transform: {ops: []}\n    webhook: {url: "https://example.com"}\n`,
    });
    expectOnlyError(p, T, 12, 5, /^step `a` has `transform` and `webhook`; a step is exactly one of/);
  });

  it("rejects a field that belongs to another step type", () => {
    const p = compileFiles({
      [T]: `${HEAD}  - id: a\n    webhook: {url: "https://example.com"}\n    params: {x: 1}\n`,
    });
    expectOnlyError(p, T, 12, 5, /^step `a`: `params` belongs on agent steps, not on a webhook step$/);
  });

  it("rejects model on a transform step and input on a webhook step", () => {
    const p = compileFiles({
      [T]: `${HEAD}  - id: a\n    transform: {ops: []}\n    model: {group: economy}\n  - id: b\n    webhook: {url: "https://example.com"}\n    input: {x: 1}\n`,
    });
    expectDiagnostic(
      p,
      "error",
      T,
      12,
      5,
      /^step `a`: `model` belongs on agent steps, not on a transform step$/,
    );
    expectDiagnostic(
      p,
      "error",
      T,
      15,
      5,
      /^step `b`: `input` belongs on workflow steps, not on a webhook step$/,
    );
  });

  it("rejects the old nested params.agent / params.server form", () => {
    const p = compileFiles({
      "gateway.yaml": GATEWAY,
      [T]: `${HEAD}  - id: a\n    agent: core/chat@1.0.0\n    params:\n      agent: {prompt: hi}\n${"model_policy: {cost_budget_usd: 1}\n"}`,
    });
    expectOnlyError(
      p,
      T,
      13,
      7,
      /^step `a`: nested `params\.agent` is the old ktsu format; put the agent's parameters directly under `params`$/,
    );
  });

  it("rejects webhooks values other than execute and suppress", () => {
    const p = compileFiles({
      [T]: `${HEAD}  - id: a\n    workflow: sub.yaml\n    webhooks: always\n`,
      "sub.yaml": `kind: workflow\nname: sub\nparams: {schema: {type: object}}\npipeline:\n${step}`,
    });
    expectOnlyError(
      p,
      T,
      12,
      15,
      /^step `a`: `webhooks` must be one of `execute`, `suppress`, got `always`$/,
    );
  });

  it("rejects a depends_on naming an unknown step, with a hint", () => {
    const p = compileFiles({
      [T]: `${HEAD}  - id: fetch\n    transform: {ops: []}\n  - id: b\n    depends_on: [fetsh]\n    transform: {ops: []}\n`,
    });
    expectOnlyError(
      p,
      T,
      13,
      18,
      /^step `b`: `depends_on` names unknown step `fetsh`; did you mean `fetch`\?$/,
    );
  });

  it("rejects a dependency cycle, naming the steps on it", () => {
    const p = compileFiles({
      [T]: `${HEAD}  - id: a\n    depends_on: [b]\n    transform: {ops: []}\n  - id: b\n    transform: {ops: []}\n`,
    });
    expectOnlyError(p, T, 11, 5, /^dependency cycle: `a` -> `b` -> `a`$/);
  });

  it("quotes hyphenated step ids so step.post-result.x is a field read, not a subtraction", () => {
    const p = compileFiles({
      [T]: `${HEAD}  - id: post-result\n    transform: {ops: []}\n  - id: b\n    condition: "step.post-result.result == 'x'"\n    transform: {ops: []}\n`,
    });
    expect(p.errors).toEqual([]);
    const b = p.result.bundle?.workflows[T]?.steps[1];
    expect(b?.condition).toBe(`step."post-result".result == 'x'`);
  });
});

describe("expressions", () => {
  it("rejects a JMESPath syntax error in a condition", () => {
    const p = compileFiles({
      [T]: `${HEAD}${step}  - id: b\n    condition: "params.x =="\n    transform: {ops: []}\n`,
    });
    expectOnlyError(p, T, 13, 16, /^step `b`: invalid JMESPath in `condition`: /);
  });

  it("rejects a JMESPath syntax error in a transform expr", () => {
    const p = compileFiles({
      [T]: `${HEAD}  - id: a\n    transform:\n      ops:\n        - map: {expr: "foo[.]"}\n`,
    });
    expectOnlyError(p, T, 13, 23, /^step `a`: invalid JMESPath in `map\.expr`: /);
  });

  it("rejects a JMESPath syntax error inside {{ }}", () => {
    const p = compileFiles({
      [T]: `${HEAD}  - id: a\n    webhook:\n      url: "https://example.com/{{ params.( }}"\n`,
    });
    expectOnlyError(p, T, 12, 12, /^step `a`: invalid JMESPath in `\{\{ params\.\( \}\}`: /);
  });

  it("rejects a condition written with {{ }}", () => {
    const p = compileFiles({
      [T]: `${HEAD}  - id: a\n    condition: "{{ params.ok }}"\n    transform: {ops: []}\n`,
    });
    expectOnlyError(p, T, 11, 16, /^step `a`: `condition` is bare JMESPath; write it without `\{\{ \}\}`$/);
  });

  it("rejects an env var that is not declared, with a hint", () => {
    const p = compileFiles({
      [T]: `${HEAD}  - id: a\n    webhook:\n      url: "https://example.com"\n      headers: {X-Token: "{{ env.TOKNE }}"}\n`,
    });
    expectOnlyError(p, T, 13, 26, /^`env\.TOKNE` is not declared in `env`; did you mean `TOKEN`\?$/);
  });

  it("rejects reading a step that is not an ancestor", () => {
    const p = compileFiles({
      [T]: `${HEAD}  - id: a\n    transform: {ops: []}\n  - id: b\n    depends_on: []\n    condition: "step.a.result"\n    transform: {ops: []}\n`,
    });
    expectOnlyError(
      p,
      T,
      14,
      16,
      /^step `b` reads `step\.a`, which is not one of its ancestors; add `a` to its `depends_on`/,
    );
  });

  it("names an unknown hyphenated step id as written, with a hint", () => {
    const p = compileFiles({
      [T]: `${HEAD}  - id: first-step\n    transform: {ops: []}\n  - id: b\n    condition: "step.first-stp.result"\n    transform: {ops: []}\n`,
    });
    expectOnlyError(
      p,
      T,
      13,
      16,
      /^step `b`: `step\.first-stp` is not a step of this pipeline; did you mean `first-step`\?$/,
    );
  });

  it("rejects a later step read through {{ }}", () => {
    const p = compileFiles({
      [T]: `${HEAD}  - id: a\n    webhook:\n      url: "https://example.com"\n      body: {x: "{{ step.b.result }}"}\n  - id: b\n    transform: {ops: []}\n`,
    });
    expectOnlyError(p, T, 13, 17, /^step `a` reads `step\.b`, which is not one of its ancestors/);
  });

  it("rejects a transform input `from` and a `merge` of non-ancestor steps", () => {
    const p = compileFiles({
      [T]: `${HEAD}  - id: a\n    transform: {ops: []}\n  - id: b\n    depends_on: []\n    transform:\n      inputs: [{from: a}]\n      ops:\n        - merge: [a]\n`,
    });
    expectDiagnostic(p, "error", T, 15, 23, /^step `b` reads `step\.a`, which is not one of its ancestors/);
    expectDiagnostic(p, "error", T, 17, 19, /^step `b` reads `step\.a`, which is not one of its ancestors/);
    expect(p.errors).toHaveLength(2);
  });

  it("rejects a transform input that is neither a step id nor one {{ expr }}", () => {
    const p = compileFiles({ [T]: `${HEAD}${step}  - id: b\n    transform:\n      inputs: [{from: aa}]\n` });
    expectOnlyError(
      p,
      T,
      14,
      23,
      /^step `b`: `from: aa` is neither a step id nor one `\{\{ expr \}\}`; did you mean `a`\?$/,
    );
  });

  it("reads ancestors through the implicit previous-step edges", () => {
    const p = compileFiles({
      [T]: `${HEAD}${step}  - id: b\n    transform: {ops: []}\n  - id: c\n    condition: "step.a.result && step.b.result"\n    transform: {ops: []}\n`,
    });
    expect(p.errors).toEqual([]);
    expect(p.result.bundle?.workflows[T]?.steps[2]?.ancestors).toEqual(["a", "b"]);
  });
});

describe("env, auth and secrets", () => {
  const sub = `kind: workflow\nname: sub\nparams: {schema: {type: object}}\nenv:\n  - {name: X, secret: true}\npipeline:\n  - id: s\n    webhook:\n      url: "https://example.com"\n      headers: {A: "{{ env.X }}"}\n`;
  const parent = `${HEAD}  - id: a\n    workflow: sub.yaml\n`;

  it("rejects env declared in a workflow used as a sub-workflow", () => {
    const p = compileFiles({ [T]: parent, "sub.yaml": sub });
    expectDiagnostic(
      p,
      "error",
      "sub.yaml",
      4,
      1,
      /^`env` is for root workflows only: `sub\.yaml` is used as a sub-workflow by `t\.workflow\.yaml`/,
    );
  });

  it("rejects env used in a workflow used as a sub-workflow", () => {
    const p = compileFiles({ [T]: parent, "sub.yaml": sub });
    expectDiagnostic(
      p,
      "error",
      "sub.yaml",
      10,
      20,
      /^`env\.X` is not available here: `sub\.yaml` is used as a sub-workflow/,
    );
    expect(p.errors).toHaveLength(2);
  });

  it("rejects an invoke.auth.scheme that is neither a credential nor a signature scheme", () => {
    const p = compileFiles({ [T]: HEAD.replace("auth: {secret:", "auth: {scheme: basic, secret:") + step });
    expectOnlyError(
      p,
      T,
      6,
      18,
      /^`invoke\.auth\.scheme` must be one of `raw`, `bearer`, `hmac`, `github`, .*`discord`, got `basic`$/,
    );
  });

  it("rejects an invoke.auth.secret written inline", () => {
    const p = compileFiles({ [T]: HEAD.replace('"{{ env.TOKEN }}"', "hunter2") + step });
    expectOnlyError(
      p,
      T,
      6,
      18,
      /^`invoke\.auth\.secret` must be exactly `\{\{ env\.NAME \}\}` \(a declared env var; ktsu's `env:NAME` is read the same way\), got `hunter2`$/,
    );
  });

  it("rejects an invoke.auth.secret naming an undeclared env var", () => {
    const p = compileFiles({ [T]: HEAD.replace("env.TOKEN", "env.TOKNE") + step });
    expectOnlyError(p, T, 6, 18, /^`env\.TOKNE` is not declared in `env`; did you mean `TOKEN`\?$/);
  });

  it("rejects a webhook that sends a secret to a host taken from params", () => {
    const p = compileFiles({
      [T]: `${HEAD}  - id: a\n    webhook:\n      url: "https://{{ params.host }}/hook"\n      headers: {Authorization: "Bearer {{ env.TOKEN }}"}\n`,
    });
    expectOnlyError(
      p,
      T,
      12,
      12,
      /^step `a` uses secret `env\.TOKEN` in its headers, but its url host comes from `params\.host`/,
    );
  });

  it("rejects a signed webhook whose whole url comes from a step output", () => {
    const p = compileFiles({
      [T]: `${HEAD}${step}  - id: b\n    webhook:\n      url: "{{ step.a.result }}"\n      sign: {secret: "{{ env.TOKEN }}"}\n`,
    });
    expectOnlyError(
      p,
      T,
      14,
      12,
      /^step `b` uses secret `env\.TOKEN` to sign it, but its url host comes from `step\.a`/,
    );
  });

  it("rejects a webhook that puts a secret in the query of a url whose host comes from params", () => {
    const p = compileFiles({
      [T]: `${HEAD}  - id: a\n    webhook:\n      url: "https://{{ params.host }}/hook?token={{ env.TOKEN }}"\n`,
    });
    expectOnlyError(
      p,
      T,
      12,
      12,
      /^step `a` uses secret `env\.TOKEN` in its url, but its url host comes from `params\.host`/,
    );
  });

  it("accepts a secret sent to an env host with a caller-chosen path", () => {
    const p = compileFiles({
      [T]: `${HEAD.replace("  - {name: TOKEN, secret: true}", "  - {name: TOKEN, secret: true}\n  - {name: BASE, secret: false}")}  - id: a\n    webhook:\n      url: "{{ env.BASE }}/items/{{ params.id }}?q={{ params.q }}"\n      headers: {Authorization: "Bearer {{ env.TOKEN }}"}\n`,
    });
    expect(p.errors).toEqual([]);
    const url = p.result.bundle?.workflows[T]?.steps[0];
    expect(url?.kind === "webhook" && url.url).toEqual({
      t: "concat",
      parts: [{ e: "env.BASE" }, "/items/", { e: "params.id" }, "?q=", { e: "params.q", encode: true }],
    });
  });
});

describe("sub-workflows", () => {
  const child = (name: string, next: string | null) =>
    `kind: workflow\nname: ${name}\nparams: {schema: {type: object}}\npipeline:\n${next ? `  - id: call\n    workflow: ${next}\n` : step}`;

  it("rejects a sub-workflow file that does not exist", () => {
    const p = compileFiles({ [T]: `${HEAD}  - id: a\n    workflow: missing.yaml\n` });
    expectOnlyError(p, T, 11, 15, /^sub-workflow file `missing\.yaml` not found \(relative to this file\)$/);
  });

  it("rejects a sub-workflow cycle", () => {
    const p = compileFiles({
      [T]: `${HEAD}  - id: a\n    workflow: x.yaml\n`,
      "x.yaml": child("x", "y.yaml"),
      "y.yaml": child("y", "x.yaml"),
    });
    expectOnlyError(p, "y.yaml", 6, 15, /^sub-workflow cycle: `x\.yaml` -> `y\.yaml` -> `x\.yaml`/);
  });

  it("rejects nesting deeper than 8 levels", () => {
    const files: Record<string, string> = { [T]: `${HEAD}  - id: a\n    workflow: l1.yaml\n` };
    for (let i = 1; i <= 9; i++) files[`l${i}.yaml`] = child(`l${i}`, i < 9 ? `l${i + 1}.yaml` : null);
    const p = compileFiles(files);
    expectOnlyError(
      p,
      "l8.yaml",
      6,
      15,
      /^sub-workflow nesting deeper than 8 levels: `t\.workflow\.yaml` -> `l1\.yaml` .* -> `l9\.yaml`$/,
    );
  });

  it("accepts exactly 8 levels", () => {
    const files: Record<string, string> = { [T]: `${HEAD}  - id: a\n    workflow: l1.yaml\n` };
    for (let i = 1; i <= 8; i++) files[`l${i}.yaml`] = child(`l${i}`, i < 8 ? `l${i + 1}.yaml` : null);
    expect(compileFiles(files).errors).toEqual([]);
  });
});

describe("warnings", () => {
  it("warns about a root workflow without invoke.auth", () => {
    const p = compileFiles({
      [T]: `kind: workflow\nname: open\nparams: {schema: {type: object}}\npipeline:\n${step}`,
    });
    expectDiagnostic(
      p,
      "warning",
      T,
      2,
      7,
      /^workflow `open` has no `invoke\.auth`: anyone who can reach the Worker can invoke it$/,
    );
    expect(p.result.bundle).not.toBeNull();
  });

  it("warns about an env entry without secret and treats it as secret", () => {
    const p = compileFiles({ [T]: HEAD.replace("{name: TOKEN, secret: true}", "{name: TOKEN}") + step });
    expectDiagnostic(p, "warning", T, 8, 5, /^env `TOKEN` does not say `secret:`; it is treated as secret/);
    expect(p.result.bundle?.workflows[T]?.env).toEqual([{ name: "TOKEN", secret: true }]);
  });

  it("warns about reading a field a step's output never has", () => {
    const p = compileFiles({
      [T]: `${HEAD}${step}  - id: b\n    condition: "step.a.reslt"\n    transform: {ops: []}\n`,
    });
    expectDiagnostic(
      p,
      "warning",
      T,
      13,
      16,
      /^`step\.a\.reslt` is always null: the output of step `a` has no field `reslt` here \(known: `result`\)$/,
    );
    expect(p.errors).toEqual([]);
  });

  it("warns about a field missing from a transform's output.schema", () => {
    const p = compileFiles({
      [T]: `${HEAD}  - id: a\n    transform: {ops: []}\n    output: {schema: {type: object, properties: {id: {type: string}}}}\n  - id: b\n    condition: "step.a.result.name"\n    transform: {ops: []}\n`,
    });
    expectDiagnostic(
      p,
      "warning",
      T,
      14,
      16,
      /^`step\.a\.result\.name` is always null: .* has no field `name` here \(known: `id`\)$/,
    );
  });
});
