/** Build checks of docs/file-format.md's step fields: `retry` where it applies, its ranges, `on_error`. */
import { afterAll, describe, expect, it } from "vitest";
import type { WebhookStep } from "../../src/bundle.ts";
import { compileFiles, expectDiagnostic, removeProjects } from "./temp-project.ts";

afterAll(removeProjects);

const T = "t.workflow.yaml";
const HEAD = `kind: workflow
name: t
params:
  schema: {type: object}
pipeline:
`;

describe("retry", () => {
  it("compiles a webhook's policy, with the back-off defaults of 1 s and 60 s", () => {
    const p = compileFiles({
      [T]: `${HEAD}  - id: post
    webhook: {url: "https://example.com"}
    retry: {max_attempts: 7}
`,
    });
    expect(p.errors).toEqual([]);
    const post = p.result.bundle?.workflows[T]?.steps[0] as WebhookStep;
    expect(post.retry).toEqual({ maxAttempts: 7, backoffMs: 1000, maxBackoffMs: 60_000 });
  });

  it("is a build error on a transform step, at the key, saying why", () => {
    const p = compileFiles({
      [T]: `${HEAD}  - id: shape
    transform: {ops: []}
    retry: {max_attempts: 3}
`,
    });
    expectDiagnostic(
      p,
      "error",
      T,
      8,
      5,
      /^step `shape`: `retry` does not apply to transform steps: a transform is deterministic/,
    );
  });

  it("is a build error on a workflow step: the sub-workflow's steps carry their own", () => {
    const p = compileFiles({
      [T]: `${HEAD}  - id: child
    workflow: ./sub/c.yaml
    retry: {max_attempts: 3}
`,
      "sub/c.yaml": `kind: workflow
name: sub/c
visibility: sub-workflow
params:
  schema: {type: object}
pipeline:
  - id: x
    transform: {ops: []}
`,
    });
    expectDiagnostic(p, "error", T, 8, 5, /^step `child`: `retry` does not apply to workflow steps/);
  });

  it("refuses max_attempts outside 1..20 at the value", () => {
    const p = compileFiles({
      [T]: `${HEAD}  - id: post
    webhook: {url: "https://example.com"}
    retry: {max_attempts: 21}
`,
    });
    expectDiagnostic(p, "error", T, 8, 27, /max_attempts` must be an integer in 1\.\.20, got 21$/);
  });
});

describe("on_error", () => {
  it("accepts continue and fail on any step kind; anything else is an error", () => {
    const ok = compileFiles({
      [T]: `${HEAD}  - id: shape
    transform: {ops: []}
    on_error: continue
`,
    });
    expect(ok.errors).toEqual([]);
    expect(ok.result.bundle?.workflows[T]?.steps[0]?.onError).toBe("continue");
    const bad = compileFiles({
      [T]: `${HEAD}  - id: shape
    transform: {ops: []}
    on_error: ignore
`,
    });
    expect(bad.errors.length).toBeGreaterThan(0);
    expect(bad.errors[0]?.line).toBe(8);
  });
});

describe("notify", () => {
  const PIPE = `pipeline:
  - id: x
    transform: {ops: []}
`;
  const WITH_ENV = `kind: workflow
name: t
params:
  schema: {type: object}
env:
  - {name: ALERTS_URL, secret: true}
  - {name: ALERTS_SIGNING_SECRET, secret: true}
`;

  it("compiles entries with on defaulting to [failed], a secret URL and a signing secret", () => {
    const p = compileFiles({
      [T]: `${WITH_ENV}notify:
  - url: "{{ env.ALERTS_URL }}"
    sign: {secret: "{{ env.ALERTS_SIGNING_SECRET }}"}
  - url: "https://hooks.example.com/runs"
    on: [complete, canceled]
${PIPE}`,
    });
    expect(p.errors).toEqual([]);
    const notify = p.result.bundle?.workflows[T]?.notify;
    expect(notify?.map((n) => n.on)).toEqual([["failed"], ["complete", "canceled"]]);
    expect(notify?.[0]?.sign).toEqual({ secretEnv: "ALERTS_SIGNING_SECRET" });
  });

  it("compiles an entry's own retry schedule, and reports one out of range at the value", () => {
    const ok = compileFiles({
      [T]: `${WITH_ENV}notify:
  - url: "https://hooks.example.com/runs"
    retry: {schedule_s: [0, 5, 300]}
${PIPE}`,
    });
    expect(ok.errors).toEqual([]);
    expect(ok.result.bundle?.workflows[T]?.notify?.[0]?.retry).toEqual({ scheduleS: [0, 5, 300] });
    const bad = compileFiles({
      [T]: `${WITH_ENV}notify:
  - url: "https://hooks.example.com/runs"
    retry: {schedule_s: [0, 90000]}
  - url: "https://hooks.example.com/runs"
    retry: {schedule_s: []}
${PIPE}`,
    });
    const messages = bad.errors.map((e) => `${e.line}:${e.col}: ${e.message}`);
    expect(messages).toHaveLength(2);
    expect(messages[0]).toBe("10:29: `notify[0].retry.schedule_s[1]` is out of range, got 90000");
    expect(messages[1]).toMatch(/^12:\d+: /);
  });

  it("reports an undeclared env var, a URL that is not http(s), a status outside on's set and a read of params", () => {
    const p = compileFiles({
      [T]: `${HEAD.replace("pipeline:\n", "")}notify:
  - url: "{{ env.NOPE }}"
  - url: "ftp://example.com"
    on: [done]
  - url: "https://example.com/{{ params.x }}"
${PIPE}`,
    });
    const messages = p.errors.map((e) => `${e.line}: ${e.message}`);
    expect(messages.some((m) => m.startsWith("6: ") && m.includes("NOPE"))).toBe(true);
    expect(messages.some((m) => m.startsWith("7: ") && m.includes("absolute http(s) URL"))).toBe(true);
    expect(messages.some((m) => m.startsWith("8: "))).toBe(true);
    expect(messages.some((m) => m.startsWith("9: ") && m.includes("may read only `env`"))).toBe(true);
  });

  it("is a build error in a file used only as a sub-workflow", () => {
    const p = compileFiles({
      [T]: `${HEAD}  - id: child
    workflow: ./sub/c.yaml
`,
      "sub/c.yaml": `kind: workflow
name: sub/c
visibility: sub-workflow
params:
  schema: {type: object}
notify:
  - url: "https://example.com"
pipeline:
  - id: x
    transform: {ops: []}
`,
    });
    expect(
      p.errors.some((e) => e.file.endsWith("c.yaml") && e.message.includes("`notify` is for invocable")),
    ).toBe(true);
  });
});

describe("history", () => {
  it("compiles history: failures on a root workflow, and refuses it in a file used only as a sub-workflow", () => {
    const ok = compileFiles({
      [T]: `kind: workflow
name: t
history: failures
params: {schema: {type: object}}
pipeline:
  - id: x
    transform: {ops: []}
`,
    });
    expect(ok.errors).toEqual([]);
    expect(ok.result.bundle?.workflows[T]?.history).toBe("failures");
    const sub = compileFiles({
      [T]: `kind: workflow
name: t
params: {schema: {type: object}}
pipeline:
  - id: call
    workflow: ./child.yaml
`,
      "child.yaml": `kind: workflow
name: child
visibility: sub-workflow
history: failures
params: {schema: {type: object}}
pipeline:
  - id: x
    transform: {ops: []}
`,
    });
    expect(sub.errors.map((e) => `${e.file.split("/").pop()}:${e.line}:${e.col}: ${e.message}`)).toEqual([
      "child.yaml:4:1: `history` is for invocable workflows (a sub-workflow's run is its caller's)",
    ]);
  });
});
