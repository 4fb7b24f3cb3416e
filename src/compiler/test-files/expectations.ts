/**
 * An expectation that can never hold (a step that does not exist, a field the step kind never
 * has, an unknown error code, an assert reading nothing) would fail every run for a reason that is
 * in the test, not the workflow: it is a build error instead, at the expectation's line.
 */
import { type Bundle, type CompiledWorkflow, isFanOut } from "../../bundle.ts";
import { hint } from "../../common/did-you-mean.ts";
import { isObject } from "../../common/guards.ts";
import { STEP_ERROR_CODES } from "../../engine/types.ts";
import { checkExpression, quoteStepIds, rootPaths } from "../expressions.ts";
import type { DataPath } from "../yaml-source.ts";
import type { CaseAt, Report } from "./report.ts";
import { type PathTarget, resolveStepPath, toolRule } from "./step-paths.ts";
import type { TestCase } from "./suite.ts";

/** What `assert` expressions read. */
const ASSERT_ROOTS = ["params", "env", "step", "output", "run", "requests", "approvals"];

/** The case's `expect`, checked; tool-call paths and quoted asserts into `tc`. */
export function compileExpect(
  bundle: Omit<Bundle, "hash">,
  w: CompiledWorkflow,
  tc: TestCase,
  at: CaseAt,
  err: Report,
): void {
  const ex = tc.expect;
  checkExpectedError(ex.error, at("expect", "error"), err, (p) => resolveStepPath(bundle, w, p), true);
  if (Array.isArray(ex.compensated)) {
    ex.compensated.forEach((p, i) => {
      if (typeof p !== "string") return; // the schema check reported it
      const target = resolveStepPath(bundle, w, p);
      if (!target.ok) err(at("expect", "compensated", i), `expect.compensated: ${target.message}`);
      else if (!target.step.compensate)
        err(
          at("expect", "compensated", i),
          `expect.compensated: \`${p}\` has no \`compensate\`, so it is never undone`,
        );
    });
  }
  if (ex.response !== undefined && w.invoke.response === null) {
    err(
      at("expect", "response"),
      `workflow \`${w.name}\` has no \`invoke.response\`: its invoke answers with the run`,
      "key",
    );
  }
  if (isObject(ex.steps)) {
    for (const [key, value] of Object.entries(ex.steps)) {
      const path = at("expect", "steps", key);
      const target = resolveStepPath(bundle, w, key);
      if (!target.ok || target.call?.kind === "needs_human") {
        err(
          path,
          `expect.steps: ${target.ok ? `\`${key}\` is a human's decision, not a step (its approval is in the step's \`tool_calls\` or in \`assert\`'s \`approvals\`)` : target.message}`,
          "key",
        );
        continue;
      }
      if (target.call?.kind === "tool") {
        const rule =
          target.step.kind === "agent" ? toolRule(bundle, target.step, target.call.tool, false) : null;
        if (rule && !rule.ok) {
          err(path, `expect.steps: ${rule.message}`, "key");
          continue;
        }
        if (isFanOut(target.step) && !target.item) {
          const stepPath = key.slice(0, key.lastIndexOf("/tools/"));
          err(
            path,
            `expect.steps: \`${stepPath}\` fans out: name the item whose calls you expect (\`${stepPath}/0/tools/${target.call.tool}\`)`,
            "key",
          );
          continue;
        }
        tc.toolPaths.push(key);
        if (!isObject(value)) continue;
        for (const field of Object.keys(value)) {
          if (field !== "request" && field !== "requests") {
            err(
              [...path, field],
              `expect.steps: \`${key}\` is a tool call: it has \`request\` (the last call: {server, url, headers, name, arguments}) and \`requests\` (every call); the step \`${key.slice(0, key.lastIndexOf("/tools/"))}\` has the rest (\`tool_calls\`)`,
              "key",
            );
          }
        }
        continue;
      }
      if (!isObject(value)) continue;
      const kind = target.step.kind;
      for (const field of ["request", "requests"]) {
        if (field in value && kind !== "webhook" && kind !== "agent") {
          err(
            [...path, field],
            `expect.steps: \`${key}\` is a ${kind} step; only webhook and agent steps send requests`,
            "key",
          );
        }
      }
      for (const field of ["tool_calls", "annotations"]) {
        if (field in value && kind !== "agent") {
          err(
            [...path, field],
            `expect.steps: \`${key}\` is a ${kind} step; only agent steps have \`${field}\``,
            "key",
          );
        }
      }
      checkExpectedError(value.error, [...path, "error"], err, null, false);
    }
  }
  if (Array.isArray(ex.assert)) {
    const ids = w.steps.map((s) => s.id);
    ex.assert.forEach((expr, j) => {
      if (typeof expr !== "string") return;
      const p = at("expect", "assert", j);
      // `requests.post-result` names a step's requests as `step.post-result` names its output.
      const c = checkExpression(quoteStepIds(expr, ids, "requests"), ids);
      if (!c.ok) {
        err(p, `invalid JMESPath in \`assert\`: ${c.error}`);
        return;
      }
      for (const r of rootPaths(c.ast)) {
        const root = r[0];
        if (root === undefined) continue;
        if (!ASSERT_ROOTS.includes(root)) {
          err(
            p,
            `\`assert\` reads \`${root}\`, which is always null: it sees ${ASSERT_ROOTS.map((x) => `\`${x}\``).join(", ")}${hint(root, ASSERT_ROOTS)}`,
          );
        } else if (root === "step" && r[1] !== undefined && !ids.includes(r[1])) {
          err(p, `\`assert\` reads \`step.${r[1]}\`, which is not a step of \`${w.name}\`${hint(r[1], ids)}`);
        }
      }
      tc.asserts.push({ source: expr, expr: c.text, index: j });
    });
  }
}

/** Codes an expectation may name: the step and run error codes. */
const ERROR_CODES: readonly string[] = STEP_ERROR_CODES.filter((c) => c !== "unmocked_step");

function checkExpectedError(
  value: unknown,
  path: DataPath,
  err: Report,
  resolve: ((p: string) => PathTarget) | null,
  run: boolean,
): void {
  const code =
    typeof value === "string" ? value : isObject(value) && typeof value.code === "string" ? value.code : null;
  const codePath = typeof value === "string" ? path : [...path, "code"];
  if (code !== null && !ERROR_CODES.includes(code)) {
    err(codePath, `unknown error code \`${code}\`${hint(code, ERROR_CODES)}`);
  }
  if (isObject(value)) {
    if (!run && "step" in value) {
      err([...path, "step"], "a step's error has `code` and `message`; `step` is on the run's error", "key");
    }
    if (resolve && typeof value.step === "string") {
      const t = resolve(value.step);
      if (!t.ok) err([...path, "step"], `error.step: ${t.message}`);
    }
  }
}
