/** Build checks of the wait step (docs/file-format.md): exactly one way to wait, signal names, timeout_s, schema, key reads. */
import { afterAll, describe, expect, it } from "vitest";
import type { WaitStep } from "../../src/bundle.ts";
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
  return compileFiles({ [T]: HEAD + body }).errors.map((e) => `${e.line}: ${e.message}`);
}

describe("wait step", () => {
  it("compiles a keyed signal wait with its schema, and a sleep", () => {
    const p = compileFiles({
      [T]: `${HEAD}  - id: payment
    wait:
      signal: payment_received
      key: "{{ params.order_id }}"
      timeout_s: 86400
      schema: {type: object, required: [amount]}
  - id: cool-down
    wait: {for_s: 30}
`,
    });
    expect(p.errors).toEqual([]);
    const [payment, cool] = (p.result.bundle?.workflows[T]?.steps ?? []) as WaitStep[];
    expect(payment?.signal).toMatchObject({ name: "payment_received", timeoutS: 86400 });
    expect(payment?.signal?.key).toEqual({ t: "expr", e: "params.order_id" });
    expect(cool?.forS).toBe(30);
  });

  it("is exactly one of signal, for_s and until", () => {
    expect(errorsOf(`  - id: w\n    wait: {for_s: 3, until: "2030-01-01T00:00:00Z"}\n`).join("\n")).toMatch(
      /^7: step `w`: a wait is exactly one of `signal`, `for_s` and `until`, not `for_s` and `until`/m,
    );
    expect(errorsOf(`  - id: w\n    wait: {}\n`).join("\n")).toMatch(/a wait is exactly one of/);
  });

  it("needs timeout_s with a signal, a valid name, and a key only with a signal", () => {
    const e = errorsOf(
      `  - id: w\n    wait: {signal: Payment!}\n  - id: s\n    wait: {for_s: 1, key: x}\n`,
    ).join("\n");
    expect(e).toMatch(/needs `timeout_s`/);
    expect(e).toMatch(/must be 1 to 64 of a-z, 0-9, `_` and `-`|must be 1 to 64 of a-z/);
    expect(e).toMatch(/`key` belongs to a wait for a `signal`/);
  });

  it("checks the key's expressions and the schema", () => {
    const e = errorsOf(`  - id: w
    wait:
      signal: paid
      key: "{{ nope.order }}"
      timeout_s: 60
      schema: {type: objekt}
`).join("\n");
    expect(e).toMatch(/nope/);
    expect(e).toMatch(/objekt|schema/);
  });

  it("is not a fan-out and takes no retry", () => {
    const e = errorsOf(`  - id: w
    wait: {for_s: 1}
    retry: {max_attempts: 2}
`).join("\n");
    expect(e).toMatch(/`retry` belongs on agent or webhook steps, not on a wait step/);
  });

  it("warns, at the wait, when it can outlast the run's deadline: a timeout_s or for_s past it, or an until with the default deadline", () => {
    const warningsOf = (body: string, policy = "") =>
      compileFiles({ [T]: HEAD.replace("pipeline:\n", `${policy}pipeline:\n`) + body })
        .warnings.filter((w) => !w.message.includes("invoke.auth"))
        .map((w) => `${w.line}:${w.col}: ${w.message}`);
    const signal = warningsOf(`  - id: pay\n    wait: {signal: paid, timeout_s: 86400}\n`);
    expect(signal).toEqual([
      expect.stringMatching(
        /^7:11: step `pay` can wait 86400 s, longer than the run's deadline \(`model_policy.timeout_s` = 300\): the run ends `timeout` first/,
      ),
    ]);
    expect(warningsOf(`  - id: nap\n    wait: {for_s: 600}\n`, "model_policy: {timeout_s: 900}\n")).toEqual(
      [],
    );
    expect(
      warningsOf(`  - id: nap\n    wait: {for_s: 600}\n`, "model_policy: {timeout_s: 60}\n").join(),
    ).toMatch(/can wait 600 s, longer than the run's deadline \(`model_policy.timeout_s` = 60\)/);
    expect(warningsOf(`  - id: later\n    wait: {until: "{{ params.order_id }}"}\n`).join()).toMatch(
      /sleeps until a time that can be later than the run's deadline \(the default 300 s/,
    );
    expect(
      warningsOf(
        `  - id: later\n    wait: {until: "{{ params.order_id }}"}\n`,
        "model_policy: {timeout_s: 86400}\n",
      ),
    ).toEqual([]);
  });
});
