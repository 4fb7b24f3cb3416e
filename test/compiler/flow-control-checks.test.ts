/**
 * Build checks of burst shaping (docs/triggers.md, "Shaping bursts"): every setting compiles to
 * what the key objects read, and every mistake is an error at its `file:line:col` with what to fix.
 */
import { afterAll, describe, expect, it } from "vitest";
import { compileFiles, removeProjects } from "./temp-project.ts";

afterAll(removeProjects);

const T = "t.workflow.yaml";
const wf = (invoke: string, extra = "") => `kind: workflow
name: t
params:
  schema: {type: object, properties: {repo: {type: string}, tenant: {type: string}, p: {type: integer}}}
invoke:
${invoke}${extra}pipeline:
  - id: a
    transform: {ops: []}
`;

function errorsOf(invoke: string, extra = ""): string[] {
  return compileFiles({ [T]: wf(invoke, extra) }).errors.map((e) => `${e.line}:${e.col}: ${e.message}`);
}

describe("burst shaping", () => {
  it("compiles throttle, debounce, priority, concurrency with on_full, and cancel_on, with their defaults", () => {
    const p = compileFiles({
      [T]: wf(
        `  throttle: {limit: 10, key: "{{ params.tenant }}"}
  debounce: {period_s: 5, key: "{{ params.repo }}"}
  priority: "{{ params.p }}"
  concurrency: {limit: 1, on_full: replace}
`,
        `cancel_on:\n  - {signal: order_canceled, key: "{{ params.repo }}"}\n`,
      ),
    });
    expect(p.errors).toEqual([]);
    const c = p.result.bundle?.workflows[T];
    expect(c?.invoke.throttle).toEqual({
      limit: 10,
      periodMs: 60_000,
      key: { t: "expr", e: "params.tenant" },
    });
    expect(c?.invoke.debounce).toEqual({
      periodMs: 5000,
      maxWaitMs: 50_000,
      key: { t: "expr", e: "params.repo" },
    });
    expect(c?.invoke.priority).toEqual({ t: "expr", e: "params.p" });
    expect(c?.invoke.concurrency).toEqual({ limit: 1, key: null, onFull: "replace" });
    expect(c?.cancelOn).toEqual([{ signal: "order_canceled", key: { t: "expr", e: "params.repo" } }]);
  });

  it("compiles a batch with its default max_wait_s", () => {
    const p = compileFiles({ [T]: wf(`  batch: {max_items: 50}\n`) });
    expect(p.errors).toEqual([]);
    expect(p.result.bundle?.workflows[T]?.invoke.batch).toEqual({
      maxItems: 50,
      maxWaitMs: 10_000,
      key: null,
    });
  });

  it("refuses debounce with batch, at the batch", () => {
    expect(errorsOf(`  debounce: {period_s: 1}\n  batch: {max_items: 5}\n`)).toEqual([
      expect.stringMatching(/^7:3: `invoke.debounce` and `invoke.batch` exclude each other/),
    ]);
  });

  it("refuses every setting out of its range, with the range", () => {
    const e = errorsOf(`  throttle: {limit: 0, period_s: 100000}
  debounce: {period_s: 0.01, max_wait_s: 90000}
  concurrency: {limit: 101, on_full: drop}
`).join("\n");
    expect(e).toMatch(/6:\d+: .*limit.*must be an integer in 1\.\.10000, got 0/);
    expect(e).toMatch(/6:\d+: .*period_s.*must be a number of seconds in 1\.\.86400, got 100000/);
    expect(e).toMatch(/7:\d+: .*period_s.*must be a number of seconds in 0\.1\.\.3600, got 0\.01/);
    expect(e).toMatch(/7:\d+: .*max_wait_s.*must be a number of seconds in 0\.1\.\.86400, got 90000/);
    expect(e).toMatch(/8:\d+: .*limit.*must be an integer in 1\.\.100, got 101/);
    expect(e).toMatch(
      /8:\d+: `invoke.concurrency.on_full` must be one of `queue`, `skip`, `replace`, got `drop`/,
    );
    expect(errorsOf(`  batch: {max_items: 1, max_wait_s: 4000}\n`).join("\n")).toMatch(
      /must be an integer in 2\.\.1000, got 1[\s\S]*must be a number of seconds in 0\.1\.\.3600, got 4000/,
    );
  });

  it("refuses a debounce whose max_wait_s is shorter than its period_s", () => {
    expect(errorsOf(`  debounce: {period_s: 10, max_wait_s: 5}\n`)).toEqual([
      expect.stringMatching(/^6:40: `invoke.debounce.max_wait_s` \(5\) is shorter than `period_s` \(10\)/),
    ]);
  });

  it("refuses keys and a priority that read anything but params and request", () => {
    const e = errorsOf(
      `  throttle: {limit: 1, key: "{{ env.X }}"}\n  priority: "{{ step.a.result }}"\n`,
    ).join("\n");
    expect(e).toMatch(/`invoke.throttle.key` may read only `params` and `request`, not `env`/);
    expect(e).toMatch(/`invoke.priority` may read only `params` and `request`, not `step`/);
  });

  it("refuses a cancel_on signal name that no signal could have, and an unknown field, with a hint", () => {
    const e = errorsOf(`  throttle: {limit: 1}\n`, `cancel_on:\n  - {signal: Order Canceled, kye: x}\n`).join(
      "\n",
    );
    expect(e).toMatch(/must be 1 to 64 of a-z, 0-9, `_` and `-`/);
    expect(e).toMatch(/kye.*did you mean `key`/);
  });
});
