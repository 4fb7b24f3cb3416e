/**
 * Build checks of `compensate:` (docs/file-format.md, "Compensation"): on the kinds that act
 * outside the run only, exactly one block, no agent, its retry and timeout defaults, and templates
 * that read only what a compensation can (`output` and `error` besides what the step read), each
 * error at its file:line:col.
 */
import { afterAll, describe, expect, it } from "vitest";
import type { WebhookStep } from "../../src/bundle.ts";
import { compileFiles, removeProjects } from "./temp-project.ts";

afterAll(removeProjects);

const T = "t.workflow.yaml";
const HEAD = `kind: workflow
name: t
params:
  schema: {type: object, properties: {order_id: {type: string}}}
pipeline:
`;

function errorsOf(body: string): string[] {
  return compileFiles({ [T]: HEAD + body }).errors.map((e) => `${e.line}:${e.col}: ${e.message}`);
}

describe("compensate", () => {
  it("compiles a webhook compensation with the defaults: 10 attempts from 1 s doubling to 300 s, 30 s each", () => {
    const p = compileFiles({
      [T]: `${HEAD}  - id: reserve
    webhook: {url: "https://warehouse.example/reservations", body: {order: "{{ params.order_id }}"}}
    compensate:
      webhook:
        url: "https://warehouse.example/reservations/{{ output.body.id }}"
        method: DELETE
        headers: {x-reason: "{{ error.code }}"}
`,
    });
    expect(p.errors).toEqual([]);
    const [reserve] = (p.result.bundle?.workflows[T]?.steps ?? []) as WebhookStep[];
    expect(reserve?.compensate).toMatchObject({
      webhook: { method: "DELETE", body: null, sign: null },
      workflow: null,
      retry: { maxAttempts: 10, backoffMs: 1_000, maxBackoffMs: 300_000 },
      timeoutS: 30,
    });
  });

  it("takes retry in the retry form and timeout_s", () => {
    const p = compileFiles({
      [T]: `${HEAD}  - id: reserve
    webhook: {url: "https://w.example/r"}
    compensate:
      webhook: {url: "https://w.example/r/1", method: DELETE}
      retry: {max_attempts: 4, backoff_s: 2, max_backoff_s: 20}
      timeout_s: 5
`,
    });
    expect(p.errors).toEqual([]);
    const [reserve] = (p.result.bundle?.workflows[T]?.steps ?? []) as WebhookStep[];
    expect(reserve?.compensate?.retry).toEqual({ maxAttempts: 4, backoffMs: 2_000, maxBackoffMs: 20_000 });
    expect(reserve?.compensate?.timeoutS).toBe(5);
  });

  it("is refused on a step that does not act outside the run (transform, wait)", () => {
    expect(
      errorsOf(`  - id: t
    transform: {inputs: [{from: "{{ params }}"}]}
    compensate: {webhook: {url: "https://x.example/"}}
  - id: w
    wait: {for_s: 1}
    compensate: {webhook: {url: "https://x.example/"}}
`),
    ).toEqual([
      "8:5: step `t`: `compensate` belongs on agent or webhook or workflow steps, not on a transform step",
      "11:5: step `w`: `compensate` belongs on agent or webhook or workflow steps, not on a wait step",
    ]);
  });

  it("holds exactly one block, never an agent, and needs one", () => {
    expect(
      errorsOf(`  - id: a
    webhook: {url: "https://x.example/"}
    compensate: {timeout_s: 5}
  - id: b
    webhook: {url: "https://x.example/"}
    compensate:
      agent: core/chat@1.0.0
`),
    ).toEqual([
      "8:5: step `a`: `compensate` needs a `webhook` or a `workflow` block (what undoes the step)",
      "12:7: step `b`: unknown field `compensate.agent`",
      "12:7: step `b`: a compensation is a `webhook` or a `workflow` block, not an `agent`: what undoes a step must do the same thing every time it is tried",
    ]);
  });

  it("reads output, error and the step's own scope, and nothing else", () => {
    expect(
      errorsOf(`  - id: a
    webhook: {url: "https://x.example/"}
    compensate:
      webhook:
        url: "https://x.example/{{ output.body.id }}"
        body: {why: "{{ error.message }}", order: "{{ params.order_id }}", x: "{{ result.id }}", i: "{{ item }}"}
`),
    ).toEqual([
      "11:79: step `a`: a compensation reads `params`, `env`, `step`, `request`, `output` (the step's output) and `error` (the run's), not `result`",
      "11:101: step `a`: `item` is only defined in the substitutions of a step with `for_each` (agent `params`, workflow `input`, webhook `url`, `headers`, `body`)",
    ]);
  });

  it("compiles a sub-workflow compensation with its input, and names a missing file at its line", () => {
    const release = `kind: workflow
name: subs/release
params:
  schema: {type: object}
pipeline:
  - id: free
    webhook: {url: "https://w.example/free/{{ params.id }}", method: DELETE}
`;
    const p = compileFiles({
      [T]: `${HEAD}  - id: reserve
    webhook: {url: "https://w.example/r"}
    compensate:
      workflow: subs/release.workflow.yaml
      input: {id: "{{ output.body.id }}"}
`,
      "subs/release.workflow.yaml": release,
    });
    expect(p.errors).toEqual([]);
    const [reserve] = (p.result.bundle?.workflows[T]?.steps ?? []) as WebhookStep[];
    expect(reserve?.compensate?.workflow).toMatchObject({
      key: "subs/release.workflow.yaml",
      webhooks: "execute",
    });
    expect(
      errorsOf(`  - id: b
    webhook: {url: "https://w.example/r"}
    compensate:
      workflow: subs/missing.workflow.yaml
`),
    ).toEqual(["9:17: sub-workflow file `subs/missing.workflow.yaml` not found (relative to this file)"]);
  });

  it("lets a fan-out item's compensation read item and item_index", () => {
    expect(
      errorsOf(`  - id: a
    for_each: {from: "['x', 'y']"}
    webhook: {url: "https://x.example/{{ item }}"}
    compensate:
      webhook: {url: "https://x.example/{{ item }}/{{ item_index }}/{{ output.status }}"}
`),
    ).toEqual([]);
  });
});
