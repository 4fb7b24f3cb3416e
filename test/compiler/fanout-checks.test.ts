/**
 * The build's checks of `for_each` (docs/file-format.md): its fields and ranges, `from` as JMESPath
 * under the ancestor rule, `{{ item }}` / `{{ item_index }}` only in a fan-out step's
 * substitutions, the transform hint, the unbudgeted agent fan-out warning, and what the bundle
 * holds. Each test states the exact `file:line:col` the user is sent to.
 */
import { afterAll, describe, expect, it } from "vitest";
import type { AgentStep, WebhookStep, WorkflowStep } from "../../src/bundle.ts";
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
/** A step `list` (line 10) whose output's `result` is an array, for fan-outs to read. */
const LIST = `  - id: list
    transform: {inputs: [{from: "{{ params.urls }}"}]}
`;

describe("for_each in the bundle", () => {
  it("compiles a webhook fan-out: from (ids quoted), concurrency, max_items, max_failures", () => {
    const p = compileFiles({
      [T]: `${HEAD}  - id: my-list
    transform: {ops: []}
  - id: post
    webhook:
      url: "https://example.com/{{ item_index }}?u={{ item.url }}"
      body: {n: "{{ item_index }}", item: "{{ item }}"}
    for_each:
      from: step.my-list.result
      concurrency: 3
      max_items: 50
      max_failures: -1
`,
    });
    expect(p.errors).toEqual([]);
    const wf = p.result.bundle?.workflows[T];
    const post = wf?.steps[1] as WebhookStep;
    expect(post.forEach).toEqual({
      from: 'step."my-list".result',
      concurrency: 3,
      maxItems: 50,
      maxFailures: -1,
    });
    expect(post.url).toEqual({
      t: "concat",
      parts: ["https://example.com/", { e: "item_index" }, "?u=", { e: "item.url", encode: true }],
    });
    // A step without for_each carries none.
    expect(wf?.steps[0]).not.toHaveProperty("forEach");
  });

  it("defaults concurrency and max_items to null and max_failures to 0; accepts one {{ expr }} as from", () => {
    const p = compileFiles({
      "gateway.yaml": GATEWAY,
      [T]: `${HEAD}${LIST}  - id: ask
    agent: core/chat@1.0.0
    params: {prompt: "Summarize {{ item }}"}
    for_each: {from: "{{ step.list.result }}", concurrency: 2}
model_policy: {cost_budget_usd: 1}
`,
    });
    expect(p.errors).toEqual([]);
    const ask = p.result.bundle?.workflows[T]?.steps[1] as AgentStep;
    expect(ask.forEach).toEqual({ from: "step.list.result", concurrency: 2, maxItems: null, maxFailures: 0 });
  });

  it("reads ktsu's max_items: 0 and concurrency: 0 as no limit of their own, like leaving them out", () => {
    const p = compileFiles({
      [T]: `${HEAD}${LIST}  - id: post
    webhook: {url: "https://example.com"}
    for_each: {from: step.list.result, max_items: 0, concurrency: 0}
`,
    });
    expect(p.errors).toEqual([]);
    const post = p.result.bundle?.workflows[T]?.steps[1] as WorkflowStep;
    expect(post.forEach).toEqual({
      from: "step.list.result",
      concurrency: null,
      maxItems: null,
      maxFailures: 0,
    });
  });

  it("accepts for_each on a workflow step whose input reads item", () => {
    const p = compileFiles({
      [T]: `${HEAD}${LIST}  - id: each
    workflow: ./child.yaml
    input: {url: "{{ item }}", n: "{{ item_index }}"}
    for_each: {from: step.list.result}
`,
      "child.yaml":
        "kind: workflow\nname: child\nparams:\n  schema: {type: object}\npipeline:\n  - id: x\n    transform: {ops: []}\n",
    });
    expect(p.errors).toEqual([]);
    expect((p.result.bundle?.workflows[T]?.steps[1] as WorkflowStep | undefined)?.forEach?.from).toBe(
      "step.list.result",
    );
  });
});

describe("for_each fields", () => {
  it("rejects out-of-range concurrency, max_items and max_failures, each at its value", () => {
    const p = compileFiles({
      [T]: `${HEAD}${LIST}  - id: post
    webhook: {url: "https://example.com"}
    for_each:
      from: step.list.result
      concurrency: -1
      max_items: 1001
      max_failures: -2
`,
    });
    expectDiagnostic(
      p,
      "error",
      T,
      16,
      20,
      /^step `post`: `for_each.concurrency` must be an integer in 0\.\.1000 \(0, as in ktsu: no limit of its own\), got -1$/,
    );
    expectDiagnostic(
      p,
      "error",
      T,
      17,
      18,
      /^step `post`: `for_each.max_items` must be an integer in 0\.\.1000 \(0, as in ktsu: no limit of its own\), got 1001$/,
    );
    expectDiagnostic(
      p,
      "error",
      T,
      18,
      21,
      /^step `post`: `for_each.max_failures` must be an integer: 0 \(fail at the first failed item\), N \(tolerate N\) or -1 \(tolerate all\), got -2$/,
    );
    expect(p.errors).toHaveLength(3);
  });

  it("rejects a for_each without from, and a misspelt field with a hint", () => {
    const p = compileFiles({
      [T]: `${HEAD}${LIST}  - id: post
    webhook: {url: "https://example.com"}
    for_each: {concurency: 2}
`,
    });
    expectDiagnostic(p, "error", T, 14, 15, /^step `post`: missing required field `for_each.from`$/);
    expectDiagnostic(
      p,
      "error",
      T,
      14,
      16,
      /^step `post`: unknown field `for_each.concurency`; did you mean `concurrency`\?$/,
    );
  });

  it("rejects for_each on a transform step and points at transform map", () => {
    const p = compileFiles({
      [T]: `${HEAD}${LIST}  - id: shape
    transform: {ops: []}
    for_each: {from: step.list.result}
`,
    });
    expectOnlyError(
      p,
      T,
      14,
      5,
      /^step `shape`: `for_each` does not apply to transform steps: a transform already works on whole arrays; process each item with a `map` op/,
    );
  });
});

describe("for_each.from", () => {
  it("reports invalid JMESPath at from", () => {
    const p = compileFiles({
      [T]: `${HEAD}${LIST}  - id: post
    webhook: {url: "https://example.com"}
    for_each: {from: "step.list.[result"}
`,
    });
    expectOnlyError(p, T, 14, 22, /^step `post`: invalid JMESPath in `for_each.from`: /);
  });

  it("applies the ancestor rule: from may only read steps the fan-out depends on", () => {
    const p = compileFiles({
      [T]: `${HEAD}${LIST}  - id: post
    depends_on: []
    webhook: {url: "https://example.com"}
    for_each: {from: step.list.result}
`,
    });
    expectOnlyError(p, T, 15, 22, /^step `post` reads `step\.list`, which is not one of its ancestors/);
  });

  it("rejects text around a {{ }} in from", () => {
    const p = compileFiles({
      [T]: `${HEAD}${LIST}  - id: post
    webhook: {url: "https://example.com"}
    for_each: {from: "items: {{ step.list.result }}"}
`,
    });
    expectOnlyError(
      p,
      T,
      14,
      22,
      /^step `post`: `for_each.from` is bare JMESPath \(like `condition`\) or exactly one `\{\{ expr \}\}`$/,
    );
  });

  it("rejects ktsu's bare step id as the root of from, naming step.X", () => {
    const p = compileFiles({
      [T]: `${HEAD}${LIST}  - id: post
    webhook: {url: "https://example.com"}
    for_each: {from: list.result}
`,
    });
    expectOnlyError(
      p,
      T,
      14,
      22,
      /^step `post`: `for_each.from` reads `list`, which is not defined: it sees `params`, `env`, `step` and `request` \(a step's output is read as `step\.list`\)$/,
    );
  });

  it("reads env like any expression (a declared name only)", () => {
    const p = compileFiles({
      [T]: `${HEAD}  - id: post
    webhook: {url: "https://example.com"}
    for_each: {from: "split(',', env.NOPE)"}
`,
    });
    expectOnlyError(p, T, 12, 22, /^`env\.NOPE` is not declared in `env`/);
  });
});

describe("item and item_index", () => {
  it("are build errors outside a fan-out step, each at its position", () => {
    const p = compileFiles({
      [T]: `${HEAD}  - id: post
    webhook:
      url: "https://example.com/{{ item }}"
      body: {n: "{{ item_index }}"}
  - id: shape
    transform: {inputs: [{from: "{{ item }}"}]}
`,
    });
    const only = /is only defined in the substitutions of a step with `for_each`/;
    expectDiagnostic(p, "error", T, 12, 12, new RegExp(`^step \`post\`: \`item\` ${only.source}`));
    expectDiagnostic(p, "error", T, 13, 17, new RegExp(`^step \`post\`: \`item_index\` ${only.source}`));
    expectDiagnostic(p, "error", T, 15, 33, new RegExp(`^step \`shape\`: \`item\` ${only.source}`));
    expect(p.errors).toHaveLength(3);
  });

  it("are build errors in the fan-out step's own condition and from", () => {
    const p = compileFiles({
      [T]: `${HEAD}${LIST}  - id: post
    condition: "item.ok"
    webhook: {url: "https://example.com/{{ item }}"}
    for_each: {from: "item_index"}
`,
    });
    expectDiagnostic(
      p,
      "error",
      T,
      13,
      16,
      /^step `post`: `item` is not defined in `condition`: the condition is evaluated once, before the fan-out/,
    );
    expectDiagnostic(
      p,
      "error",
      T,
      15,
      22,
      /^step `post`: `item_index` is not defined in `for_each.from`: it is what `for_each.from` produces$/,
    );
    expect(p.errors).toHaveLength(2);
  });

  it("are allowed in a fan-out step's headers, and an error in the next step's", () => {
    const p = compileFiles({
      [T]: `${HEAD}${LIST}  - id: post
    webhook:
      url: "https://example.com"
      headers: {X-Index: "{{ item_index }}"}
    for_each: {from: step.list.result}
  - id: next
    webhook: {url: "https://example.com", headers: {X-Index: "{{ item_index }}"}}
`,
    });
    expectOnlyError(
      p,
      T,
      18,
      62,
      /^step `next`: `item_index` is only defined in the substitutions of a step with `for_each`/,
    );
  });
});

describe("secrets and caller-chosen hosts", () => {
  const head = HEAD.replace(
    "  - {name: TOKEN, secret: true}\n",
    "  - {name: TOKEN, secret: true}\n  - {name: URLS, secret: false}\n",
  );
  it("lets a fan-out sign requests to URLs listed in env", () => {
    const p = compileFiles({
      [T]: `${head}  - id: post
    webhook: {url: "{{ item }}", headers: {Authorization: "Bearer {{ env.TOKEN }}"}}
    for_each: {from: "split(env.URLS, ',')"}
`,
    });
    expect(p.errors).toEqual([]);
  });

  it("refuses a secret sent to URLs the caller lists in params", () => {
    const p = compileFiles({
      [T]: `${head}  - id: post
    webhook: {url: "{{ item.url }}", headers: {Authorization: "Bearer {{ env.TOKEN }}"}}
    for_each: {from: params.targets}
`,
    });
    expectOnlyError(
      p,
      T,
      12,
      20,
      /^step `post` uses secret `env\.TOKEN` in its headers, but its url host comes from `item\.url` \(items of `params\.targets`\): a caller could send the secret to any host/,
    );
  });
});

describe("warnings", () => {
  it("warns about an agent fan-out without concurrency in a workflow without budget", () => {
    const p = compileFiles({
      "gateway.yaml": GATEWAY,
      [T]: `${HEAD}${LIST}  - id: ask
    agent: core/chat@1.0.0
    params: {prompt: "{{ item }}"}
    for_each: {from: step.list.result}
`,
    });
    expect(p.errors).toEqual([]);
    expectDiagnostic(
      p,
      "warning",
      T,
      15,
      15,
      /^step `ask` fans an LLM agent out with no `for_each.concurrency`, and workflow `t` has no `model_policy.cost_budget_usd`/,
    );
  });

  it("does not warn when either concurrency or a budget is set", () => {
    for (const extra of [
      "    for_each: {from: step.list.result, concurrency: 4}\n",
      "    for_each: {from: step.list.result}\nmodel_policy: {cost_budget_usd: 1}\n",
    ]) {
      const p = compileFiles({
        "gateway.yaml": GATEWAY,
        [T]: `${HEAD}${LIST}  - id: ask\n    agent: core/chat@1.0.0\n    params: {prompt: "{{ item }}"}\n${extra}`,
      });
      expect(p.warnings.filter((w) => /fans an LLM agent out/.test(w.message))).toEqual([]);
    }
  });

  it("knows a fan-out's output is {results}: step.X.results is fine, another field is always null", () => {
    const p = compileFiles({
      [T]: `${HEAD}${LIST}  - id: post
    webhook: {url: "https://example.com"}
    for_each: {from: step.list.result}
  - id: after
    transform: {inputs: [{from: "{{ step.post.results }}"}, {from: "{{ step.post.status }}"}]}
`,
    });
    expect(p.errors).toEqual([]);
    expectDiagnostic(
      p,
      "warning",
      T,
      16,
      68,
      /^`step\.post\.status` is always null: the output of step `post` has no field `status` here \(known: `results`\)$/,
    );
    expect(p.warnings.filter((w) => /step\.post\.results/.test(w.message))).toEqual([]);
  });
});
