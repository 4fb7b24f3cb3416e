/**
 * A mock stands in for a step's effect, so a mock of the wrong shape would make a test pass or
 * fail for a reason the real step never has: each answer is held to what its step kind (or tool
 * call) can really answer before the runner uses it.
 */
import {
  type Bundle,
  type CompiledStep,
  type CompiledWorkflow,
  type Json,
  type MockedStepKind,
  STEP_KIND_TRAITS,
  STEP_KINDS,
} from "../../bundle.ts";
import { isObject } from "../../common/guards.ts";
import { describeViolations, validateJson } from "../../engine/schema.ts";
import type { DataPath } from "../yaml-source.ts";
import type { CaseAt, Report } from "./report.ts";
import { resolveStepPath, serversOf, toolRule } from "./step-paths.ts";
import type { MockAnswer, TestCase } from "./suite.ts";

type Obj = Record<string, unknown>;

/** The kinds a case mocks (by how: a response, a model's reply, an output), the rest run for real. */
const MOCKED_KINDS = (["response", "model", "output"] as const).flatMap((how) =>
  STEP_KINDS.filter((k) => STEP_KIND_TRAITS[k].mock === how),
);

/** The case's `mocks`, checked, into `tc.mocks`. */
export function compileMocks(
  bundle: Omit<Bundle, "hash">,
  w: CompiledWorkflow,
  raw: Obj,
  tc: TestCase,
  at: CaseAt,
  err: Report,
  warn: Report,
): void {
  // A model turn calling a tool it is never offered is a mistake, unless the case tests that.
  const expectsRefusal = JSON.stringify(raw.expect ?? null).includes("tool_not_permitted");
  if (isObject(raw.mocks)) {
    for (const [key, value] of Object.entries(raw.mocks)) {
      const path = at("mocks", key);
      // `<step path>/compensate`: the step's compensation webhook (docs/workflow-tests.md).
      const undoing = key.endsWith("/compensate")
        ? resolveStepPath(bundle, w, key.slice(0, -"/compensate".length))
        : null;
      if (undoing?.ok) {
        if (!undoing.step.compensate?.webhook) {
          err(
            path,
            `mocks: \`${key.slice(0, -"/compensate".length)}\` has no \`compensate\` webhook to mock`,
            "key",
          );
          continue;
        }
        const answers = Array.isArray(value) ? value : [value];
        if (!answers.every(isObject)) continue;
        const asWebhook = { ...undoing.step, kind: "webhook" } as CompiledStep;
        answers.forEach((a, j) => {
          checkMockAnswer(
            bundle,
            asWebhook,
            a as Obj,
            Array.isArray(value) ? [...path, j] : path,
            err,
            warn,
            expectsRefusal,
          );
        });
        tc.mocks[key] = {
          kind: "webhook",
          tool: null,
          answers: answers as MockAnswer[],
          repeat: !Array.isArray(value),
        };
        continue;
      }
      const target = resolveStepPath(bundle, w, key);
      if (!target.ok) {
        err(path, `mocks: ${target.message}`, "key");
        continue;
      }
      const step = target.step;
      if (target.call?.kind === "needs_human") {
        err(
          path,
          `mocks: \`${key}\` is a human's decision: give it under the case's \`approvals\` (approved, rejected or timeout)`,
          "key",
        );
        continue;
      }
      if (target.call?.kind === "judge") {
        // A judge is an agent call (docs/workflow-tests.md, "Evals"): its mock is an agent's.
        const judge = step.score?.find((s) => s.name === (target.call as { scorer: string }).scorer)?.judge;
        const asAgent = {
          ...step,
          kind: "agent",
          agent: judge?.agent ?? "",
          params: judge?.params ?? { t: "lit", v: {} },
          group: null,
          maxTokens: null,
        } as CompiledStep;
        const answers = Array.isArray(value) ? value : [value];
        if (!answers.every(isObject)) continue;
        answers.forEach((a, j) => {
          checkMockAnswer(
            bundle,
            asAgent,
            a as Obj,
            Array.isArray(value) ? [...path, j] : path,
            err,
            warn,
            expectsRefusal,
          );
        });
        tc.mocks[key] = {
          kind: "agent",
          tool: null,
          answers: answers as MockAnswer[],
          repeat: !Array.isArray(value),
        };
        continue;
      }
      if (target.call?.kind === "tool" && step.kind === "agent") {
        const rule = toolRule(bundle, step, target.call.tool, false);
        if (!rule.ok) {
          err(path, `mocks: ${rule.message}`, "key");
          continue;
        }
        const answers = Array.isArray(value) ? value : [value];
        if (!answers.every(isObject)) continue; // the schema check reported it
        answers.forEach((a, j) => {
          checkToolAnswer(a as Obj, Array.isArray(value) ? [...path, j] : path, err);
        });
        tc.mocks[key] = {
          kind: "tool",
          tool: target.call.tool,
          answers: answers as MockAnswer[],
          repeat: !Array.isArray(value),
        };
        continue;
      }
      if (STEP_KIND_TRAITS[step.kind].mock === null) {
        const inside = step.kind === "workflow" ? ` (mock the steps inside it, e.g. \`${key}/STEP\`)` : "";
        const mocked = MOCKED_KINDS;
        err(
          path,
          `mocks: \`${key}\` is a ${step.kind} step; only ${mocked.slice(0, -1).join(", ")} and ${mocked.at(-1)} steps are mocked, the rest run for real${inside}`,
          "key",
        );
        continue;
      }
      if (step.kind === "webhook" && target.suppressedBy !== null) {
        warn(
          path,
          `mocks: \`${key}\` never runs: webhooks inside \`${target.suppressedBy}\` are suppressed (give that workflow step \`webhooks: execute\` to run them)`,
          "key",
        );
      }
      const answers = Array.isArray(value) ? value : [value];
      if (!answers.every(isObject)) continue; // the schema check reported it
      answers.forEach((a, j) => {
        const ap = Array.isArray(value) ? [...path, j] : path;
        checkMockAnswer(bundle, step, a as Obj, ap, err, warn, expectsRefusal);
      });
      tc.mocks[key] = {
        kind: step.kind as MockedStepKind,
        tool: null,
        answers: answers as MockAnswer[],
        repeat: !Array.isArray(value),
      };
    }
  }
}

const WEBHOOK_FIELDS = ["status", "headers", "body", "delay_s", "error"];
const AGENT_FIELDS = ["output", "reply", "status", "usage", "tool_calls", "delay_s", "error"];
const TOOL_FIELDS = ["content", "structuredContent", "isError", "text", "result", "delay_s", "error"];
const ALL_FIELDS = new Set([...WEBHOOK_FIELDS, ...AGENT_FIELDS, ...TOOL_FIELDS]);

/** A tool mock: an MCP `tools/call` result (`content`, `structuredContent`, `isError`), `text`, `result` or `error`. */
function checkToolAnswer(a: Obj, path: DataPath, err: Report): void {
  for (const k of Object.keys(a)) {
    if (!TOOL_FIELDS.includes(k) && ALL_FIELDS.has(k)) {
      err(
        [...path, k],
        `\`${k}\` does not belong in a tool mock; it takes ${TOOL_FIELDS.map((f) => `\`${f}\``).join(", ")}`,
        "key",
      );
    }
  }
  const forms = [
    "content" in a || "structuredContent" in a ? "content" : null,
    "text" in a ? "text" : null,
    "result" in a ? "result" : null,
    "error" in a ? "error" : null,
  ].filter((f) => f !== null);
  if (forms.length !== 1) {
    err(
      path,
      forms.length === 0
        ? "a tool mock needs one of `text` (a text result), `result` (a JSON result), `content`/`structuredContent` (an MCP tools/call result) or `error` (the call fails)"
        : `a tool mock has ${forms.map((k) => `\`${k}\``).join(" and ")}; give exactly one`,
    );
    return;
  }
  if ("isError" in a && ("result" in a || "error" in a)) {
    err(
      [...path, "isError"],
      "`isError` goes with `text` or `content` (the error the tool reports); `error` is a call that fails",
      "key",
    );
  }
}

function checkMockAnswer(
  bundle: Omit<Bundle, "hash">,
  step: CompiledStep,
  a: Obj,
  path: DataPath,
  err: Report,
  warn: Report,
  expectsRefusal: boolean,
): void {
  if (step.kind === "wait") {
    // A wait is mocked like a webhook: what the signal (or the sleep) gives, at once.
    for (const k of Object.keys(a)) {
      if (k !== "output" && k !== "delay_s") {
        err(
          [...path, k],
          `a mock of wait step \`${step.id}\` takes \`output\` (and \`delay_s\`), not \`${k}\``,
          "key",
        );
      }
    }
    if (!("output" in a))
      err(path, `a mock of wait step \`${step.id}\` needs \`output\` (the signal's body)`);
    return;
  }
  const fields = step.kind === "webhook" ? WEBHOOK_FIELDS : AGENT_FIELDS;
  for (const k of Object.keys(a)) {
    if (!fields.includes(k) && ALL_FIELDS.has(k)) {
      err(
        [...path, k],
        `\`${k}\` does not belong in a mock of ${step.kind} step \`${step.id}\`; it takes ${fields.map((f) => `\`${f}\``).join(", ")}`,
        "key",
      );
    }
  }
  if (step.kind === "webhook") {
    if ("error" in a) {
      for (const k of ["status", "headers", "body"]) {
        if (k in a) err([...path, k], `a mock with \`error\` (a network error) has no \`${k}\``, "key");
      }
    }
    return;
  }
  if (step.kind !== "agent") return;
  const answers = ["output", "reply", "tool_calls", "status", "error"].filter((k) => k in a);
  if (answers.length !== 1) {
    err(
      path,
      answers.length === 0
        ? `a mock of agent step \`${step.id}\` needs one of \`output\` (the step's output), \`reply\` (raw reply text), \`tool_calls\` (a turn that calls tools), \`status\` (a provider HTTP error) or \`error\` (a network error)`
        : `a mock of agent step \`${step.id}\` has ${answers.map((k) => `\`${k}\``).join(" and ")}; give exactly one`,
    );
    return;
  }
  if (Array.isArray(a.tool_calls)) {
    if (serversOf(bundle, step).length === 0) {
      err(
        [...path, "tool_calls"],
        `agent \`${bundle.agents[step.agent]?.name ?? step.agent}\` has no tool servers: its model is offered no tools`,
        "key",
      );
      return;
    }
    a.tool_calls.forEach((c, k) => {
      if (!isObject(c) || typeof c.name !== "string") return; // the schema check reported it
      const rule = toolRule(bundle, step, c.name, true);
      if (!rule.ok && !expectsRefusal) {
        warn(
          [...path, "tool_calls", k, "name"],
          `${rule.message}; calling it fails the step \`tool_not_permitted\``,
        );
      }
    });
  }
  if (typeof a.status === "number" && a.status < 400) {
    err(
      [...path, "status"],
      "an agent mock's `status` is a provider's HTTP error (400 to 599); answer with `output` or `reply`",
    );
  }
  if ("usage" in a && !("output" in a || "reply" in a || "tool_calls" in a)) {
    err([...path, "usage"], "`usage` belongs to an answer (`output`, `reply` or `tool_calls`)", "key");
  }
  const agent = bundle.agents[step.agent];
  if ("output" in a && agent) {
    if (agent.builtin === "chat") {
      const out = a.output;
      if (!isObject(out) || typeof out.text !== "string") {
        err(
          [...path, "output"],
          `\`${step.agent}\` outputs \`{text: "…"}\`: the mock's output needs a string \`text\``,
        );
      }
      return;
    }
    const schema = agent.outputSchema;
    const violations = schema === null ? [] : validateJson(schema, (a.output ?? null) as Json);
    if (violations.length > 0) {
      const list = describeViolations(violations, Number.POSITIVE_INFINITY);
      warn(
        [...path, "output"],
        `the mock's output does not match agent \`${agent.name}\`'s output.schema (${list}): the step will fail \`output_schema_mismatch\` after its repair call (use \`reply\` to test that on purpose)`,
      );
    }
  }
}
