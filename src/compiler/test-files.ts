/**
 * Compiles `*.test.yaml` files (SPEC section 11) against the compiled workflows, so a mistake in
 * a test is a build error with `file:line:col` like a mistake in a workflow: fields and types
 * (schema/test.schema.json), the workflow under test, every step path in `mocks` and
 * `expect.steps` (with "did you mean"), the mock's shape for the step's type, params against the
 * workflow's params.schema, env names, error codes and `assert` expressions. The result keeps the
 * source file, so the runner can point at the exact expectation that failed.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import {
  type AgentStep,
  type Bundle,
  type CompiledAllowEntry,
  type CompiledServerRef,
  type CompiledStep,
  type CompiledWorkflow,
  isFanOut,
  type Json,
  type JsonObject,
  type MockedStepKind,
  STEP_KIND_TRAITS,
  STEP_KINDS,
} from "../bundle.ts";
import { isObject } from "../common/guards.ts";
import { exactNames, governingEntry, serverFor } from "../engine/allowlist.ts";
import { describeViolations, validateJson, violationText } from "../engine/schema.ts";
import { collectSecrets, usesAgents } from "../engine/secrets.ts";
import { STEP_ERROR_CODES } from "../engine/types.ts";
import type { DiagnosticSink } from "./diagnostics.ts";
import { hint } from "./did-you-mean.ts";
import { checkExpression, quoteStepIds, rootPaths } from "./expressions.ts";
import { checkAgainstSchema, type FormatSchema } from "./structure-check.ts";
import type { DataPath, SourceFile } from "./yaml-source.ts";

export const TEST_SCHEMA: FormatSchema = JSON.parse(
  readFileSync(new URL("../../schema/test.schema.json", import.meta.url), "utf8"),
);

/** Worker variables a case may set besides the declared env (they change how a run behaves). */
const WORKER_VARS = ["ALLOW_PRIVATE_WEBHOOKS"];

/** What `assert` expressions read. */
const ASSERT_ROOTS = ["params", "env", "step", "output", "run", "requests", "approvals"];

export interface MockAnswer {
  status?: number;
  headers?: Record<string, string>;
  body?: Json;
  output?: Json;
  reply?: string;
  usage?: { tokens_in?: number; tokens_out?: number };
  /** Agent: a model turn that calls tools (`name` as the model is offered it). */
  tool_calls?: Array<{ name: string; arguments?: Json }>;
  /** Tool: an MCP `tools/call` result, or its short forms `text` and `result`. */
  content?: Json[];
  structuredContent?: Json;
  isError?: boolean;
  text?: string;
  result?: Json;
  delay_s?: number;
  error?: string;
}

export interface MockSpec {
  kind: MockedStepKind | "tool";
  /** A tool mock's tool (its key is `<step key>/tools/<tool>`); null for a step mock. */
  tool: string | null;
  /** One per request; with `repeat` the only answer serves every request. */
  answers: MockAnswer[];
  repeat: boolean;
}

export interface ApprovalDecision {
  decision: "approved" | "rejected" | "timeout";
  comment: string | null;
  /** Virtual seconds after the request before the reviewer decides (0: at once). */
  after_s: number;
}

/** The decisions of one approval key, one per approval asked (or one for all with `repeat`). */
export interface ApprovalSpec {
  decisions: ApprovalDecision[];
  repeat: boolean;
}

export interface TestCase {
  index: number;
  name: string;
  /** Data path of the case in its file (`["cases", i]`). */
  path: DataPath;
  params: JsonObject;
  env: Record<string, string>;
  /** `request.headers` as given (names as written), or null. */
  requestHeaders: Record<string, string> | null;
  /** By step path as written (tool calls: `<step>/tools/<tool>`). */
  mocks: Record<string, MockSpec>;
  /** Human decisions by `<step>/tools/<tool>` or `<step>/needs_human`, as written. */
  approvals: Record<string, ApprovalSpec>;
  expect: JsonObject;
  /** Keys of `expect.steps` that name tool calls (`<step>/tools/<tool>`): matched against the calls' requests. */
  toolPaths: string[];
  /** `expect.assert`, step ids quoted for JMESPath, in file order. */
  asserts: Array<{ source: string; expr: string; index: number }>;
}

export interface TestSuite {
  file: SourceFile;
  /** Key in `bundle.workflows` of the workflow under test; null when it did not resolve. */
  workflowKey: string | null;
  cases: TestCase[];
}

type Obj = Record<string, unknown>;

/** What a path names below an agent step: one of its tools, or its review by a human. */
export type CallTarget = { kind: "tool"; tool: string } | { kind: "needs_human" };

/** What a slash path in a test names. */
export type PathTarget =
  | {
      ok: true;
      step: CompiledStep;
      item: boolean;
      /** `<step>/tools/<tool>` or `<step>/needs_human`; null for the step itself. */
      call: CallTarget | null;
      /** The workflow step whose `webhooks: suppress` (or its file's) skips webhooks here, or null. */
      suppressedBy: string | null;
    }
  | { ok: false; message: string };

/** The kinds a case mocks (by how: a response, a model's reply, an output), the rest run for real. */
const MOCKED_KINDS = (["response", "model", "output"] as const).flatMap((how) =>
  STEP_KINDS.filter((k) => STEP_KIND_TRAITS[k].mock === how),
);

/** The tool servers of an agent step's agent (SPEC section 9): its calls are `<path>/tools/<tool>`. */
function serversOf(bundle: Omit<Bundle, "hash">, step: AgentStep): CompiledServerRef[] {
  const agent = bundle.agents[step.agent];
  return agent?.builtin === null ? (agent.servers ?? []) : [];
}

/**
 * The allowlist entry that lets an agent step's model call `tool` (by its plain name, or as
 * `<server>__<tool>` when two servers share it), or why it never can.
 */
export function toolRule(
  bundle: Omit<Bundle, "hash">,
  step: AgentStep,
  tool: string,
  asOffered: boolean,
): { ok: true; server: string; entry: CompiledAllowEntry } | { ok: false; message: string } {
  const refs = serversOf(bundle, step);
  const split = asOffered ? /^(.+?)__(.+)$/.exec(tool) : null;
  const named = split ? refs.find((r) => r.name === split[1]) : undefined;
  const ref = named ?? serverFor(refs, tool);
  const plain = named && split ? (split[2] as string) : tool;
  const entry = ref ? governingEntry(ref.allow, plain) : undefined;
  if (ref && entry) return { ok: true, server: ref.name, entry };
  const names = [...new Set(refs.flatMap((r) => exactNames(r.allow)))];
  const lists = refs
    .map((r) => `${r.name}: ${r.allow === null ? "*" : r.allow.map((e) => e.pattern).join(", ")}`)
    .join("; ");
  return {
    ok: false,
    message: `\`${tool}\` is not allowed by the allowlists of agent \`${bundle.agents[step.agent]?.name}\` (${lists}): the model is never offered it${hint(tool, names)}`,
  };
}

/**
 * Resolves a slash path (`notify/post`, `analyze/2`, `risk/tools/get-sum`) from `wf`: step ids,
 * descending into sub-workflows; a number names a fan-out item; `tools/<name>` a tool of an agent.
 */
export function resolveStepPath(
  bundle: Omit<Bundle, "hash">,
  wf: CompiledWorkflow,
  path: string,
): PathTarget {
  const segs = path.split("/");
  let current = wf;
  let prefix = "";
  let suppressedBy: string | null = null;
  for (let i = 0; i < segs.length; ) {
    const id = segs[i] as string;
    const step = current.steps.find((s) => s.id === id);
    if (!step) {
      const where =
        prefix === "" ? `workflow \`${current.name}\`` : `\`${prefix.slice(0, -1)}\` (${current.name})`;
      return {
        ok: false,
        message: `\`${prefix}${id}\` is not a step of ${where}${hint(
          id,
          current.steps.map((s) => s.id),
        )}`,
      };
    }
    const here = prefix + id;
    i++;
    let item = false;
    if (i < segs.length && /^\d+$/.test(segs[i] as string)) {
      if (!isFanOut(step)) {
        return {
          ok: false,
          message: `\`${here}\` has no \`for_each\`, so \`${here}/${segs[i]}\` names no item`,
        };
      }
      item = true;
      i++;
    }
    if (i === segs.length) return { ok: true, step, item, call: null, suppressedBy };
    const next = segs[i] as string;
    if (step.kind === "agent" && next === "needs_human") {
      if (i + 1 < segs.length) {
        return { ok: false, message: `\`${path}\`: nothing follows \`needs_human\`` };
      }
      return { ok: true, step, item, call: { kind: "needs_human" }, suppressedBy };
    }
    if (step.kind === "agent" && next === "tools") {
      const tool = segs.slice(i + 1).join("/");
      if (tool === "")
        return { ok: false, message: `\`${path}\` names no tool (write \`${here}/tools/NAME\`)` };
      if (serversOf(bundle, step).length === 0) {
        return {
          ok: false,
          message: `agent step \`${here}\` has no tool servers, so it makes no tool calls`,
        };
      }
      return { ok: true, step, item, call: { kind: "tool", tool }, suppressedBy };
    }
    const child = step.kind === "workflow" ? bundle.workflows[step.workflow] : undefined;
    if (!child) {
      return {
        ok: false,
        message: `\`${here}\` is ${step.kind === "agent" ? "an" : "a"} ${step.kind} step: it has no steps inside (\`${path}\`)`,
      };
    }
    // SPEC section 3: webhooks run only if every workflow step on the way says `execute` (and,
    // ktsu's dual opt-in, the child file does not say `suppress`).
    const fileSuppresses = (child as { webhooks?: string }).webhooks === "suppress";
    if (
      suppressedBy === null &&
      (step.kind !== "workflow" || step.webhooks !== "execute" || fileSuppresses)
    ) {
      suppressedBy = here;
    }
    current = child;
    prefix = `${here}/${item ? `${segs[i - 1]}/` : ""}`;
  }
  return { ok: false, message: `\`${path}\` is empty` };
}

/** Every `*.test.yaml` under `dir` (absolute paths, sorted), skipping `node_modules` and dot directories. */
export function findTestFiles(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      if (e.name.startsWith(".") || e.name === "node_modules") continue;
      const abs = join(d, e.name);
      if (e.isDirectory()) walk(abs);
      else if (e.isFile() && e.name.endsWith(".test.yaml")) out.push(abs);
    }
  };
  walk(dir);
  return out.sort();
}

/** Compiles the test files in `files` against the compiled workflows of the project. */
export function compileTestFiles(
  files: SourceFile[],
  bundle: Omit<Bundle, "hash">,
  sink: DiagnosticSink,
): TestSuite[] {
  const byName = new Map<string, string>();
  for (const wf of Object.values(bundle.workflows)) if (!byName.has(wf.name)) byName.set(wf.name, wf.key);
  return files.map((file) => compileTestFile(file, bundle, byName, sink));
}

function compileTestFile(
  file: SourceFile,
  bundle: Omit<Bundle, "hash">,
  byName: Map<string, string>,
  sink: DiagnosticSink,
): TestSuite {
  const suite: TestSuite = { file, workflowKey: null, cases: [] };
  if (file.data === null) return suite;
  checkAgainstSchema(file, TEST_SCHEMA, "testFile", sink);
  const d = file.data;
  if (!isObject(d)) return suite;
  const err = (path: DataPath, msg: string, part: "key" | "value" = "value") =>
    sink.error(file.display, file.at(path, part), msg);
  const warn = (path: DataPath, msg: string, part: "key" | "value" = "value") =>
    sink.warning(file.display, file.at(path, part), msg);

  let wf: CompiledWorkflow | null = null;
  if (typeof d.workflow === "string") {
    const key = byName.get(d.workflow);
    if (key === undefined) {
      err(["workflow"], `unknown workflow \`${d.workflow}\`${hint(d.workflow, byName.keys())}`);
    } else {
      suite.workflowKey = key;
      wf = bundle.workflows[key] ?? null;
    }
  }
  const cases = Array.isArray(d.cases) ? d.cases : [];
  const names = new Map<string, number>();
  cases.forEach((raw, i) => {
    if (!isObject(raw)) return;
    const at = (...rest: Array<string | number>): DataPath => ["cases", i, ...rest];
    const name = typeof raw.name === "string" ? raw.name : `case #${i + 1}`;
    const first = names.get(name);
    if (first !== undefined) {
      err(
        at("name"),
        `duplicate case name \`${name}\` (also case #${first + 1}, line ${file.at(["cases", first, "name"]).line})`,
      );
    } else names.set(name, i);
    const tc: TestCase = {
      index: i,
      name,
      path: at(),
      params: isObject(raw.params) ? (raw.params as JsonObject) : {},
      env: isObject(raw.env) ? (stringValues(raw.env) ?? {}) : {},
      requestHeaders:
        isObject(raw.request) && isObject(raw.request.headers) ? stringValues(raw.request.headers) : null,
      mocks: {},
      approvals: {},
      expect: isObject(raw.expect) ? (raw.expect as JsonObject) : {},
      toolPaths: [],
      asserts: [],
    };
    suite.cases.push(tc);
    if (!wf) return;
    const w = wf;

    // ---- params, env, request ------------------------------------------------------------
    for (const v of validateJson(w.paramsSchema, tc.params)) {
      const segs = v.path
        .split("/")
        .slice(1)
        .map((s) => s.replace(/~1/g, "/").replace(/~0/g, "~"))
        .map((s) => (/^\d+$/.test(s) ? Number(s) : s));
      err(
        [...at("params"), ...segs],
        `params do not match \`${w.name}\`'s params.schema: ${violationText(v)}`,
      );
    }
    const known = new Set([...w.env.map((e) => e.name), ...WORKER_VARS]);
    if (usesAgents(bundle as Bundle, w)) for (const e of bundle.gateway.env) known.add(e.name);
    for (const k of Object.keys(tc.env)) {
      if (!known.has(k)) {
        warn(
          at("env", k),
          `\`${k}\` is not declared by \`${w.name}\`${usesAgents(bundle as Bundle, w) ? " or gateway.yaml" : ""}: the run cannot read it${hint(k, known)}`,
          "key",
        );
      }
    }
    for (const n of collectSecrets(bundle as Bundle, w, tc.env).tooShort) {
      err(
        at("env", n),
        `\`${n}\` is a secret shorter than 8 characters; the Worker would refuse the run (500 server_misconfigured)`,
      );
    }
    if (tc.requestHeaders !== null)
      checkRequestHeaders(w, tc.requestHeaders, at("request", "headers"), err, warn);

    // ---- mocks -----------------------------------------------------------------------------
    // A model turn calling a tool it is never offered is a mistake, unless the case tests that.
    const expectsRefusal = JSON.stringify(raw.expect ?? null).includes("tool_not_permitted");
    if (isObject(raw.mocks)) {
      for (const [key, value] of Object.entries(raw.mocks)) {
        const path = at("mocks", key);
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

    // ---- approvals -------------------------------------------------------------------------
    if (isObject(raw.approvals)) {
      for (const [key, value] of Object.entries(raw.approvals)) {
        const spec = compileApproval(bundle, w, key, value, at("approvals", key), err, warn);
        if (spec) tc.approvals[key] = spec;
      }
    }

    // ---- expect ----------------------------------------------------------------------------
    const ex = tc.expect;
    checkExpectedError(ex.error, at("expect", "error"), err, (p) => resolveStepPath(bundle, w, p), true);
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
            err(
              p,
              `\`assert\` reads \`step.${r[1]}\`, which is not a step of \`${w.name}\`${hint(r[1], ids)}`,
            );
          }
        }
        tc.asserts.push({ source: expr, expr: c.text, index: j });
      });
    }
  });
  return suite;
}

function stringValues(o: Obj): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(o)) if (typeof v === "string") out[k] = v;
  return out;
}

type Report = (path: DataPath, msg: string, part?: "key" | "value") => void;

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

const DECISIONS = ["approved", "rejected", "timeout"] as const;

/**
 * One entry of a case's `approvals`: `<step>/tools/<tool>` (a tool whose allowlist entry has
 * `require_approval`) or `<step>/needs_human` (an output with `ktsu_needs_human`), decided
 * `approved`, `rejected` or `timeout`, or `{decision, comment, after_s}`; a list decides
 * successive approvals of the key in order.
 */
function compileApproval(
  bundle: Omit<Bundle, "hash">,
  wf: CompiledWorkflow,
  key: string,
  value: unknown,
  path: DataPath,
  err: Report,
  warn: Report,
): ApprovalSpec | null {
  const target = resolveStepPath(bundle, wf, key);
  if (!target.ok) {
    err(path, `approvals: ${target.message}`, "key");
    return null;
  }
  const { step, call } = target;
  if (call === null || step.kind !== "agent") {
    err(
      path,
      `approvals: \`${key}\` is a step; an approval is asked by a gated tool call (\`${key}/tools/TOOL\`) or by an agent's output for review (\`${key}/needs_human\`)`,
      "key",
    );
    return null;
  }
  let ownTimeout: number | null = null;
  if (call.kind === "tool") {
    const rule = toolRule(bundle, step, call.tool, false);
    if (!rule.ok) {
      err(path, `approvals: ${rule.message}`, "key");
      return null;
    }
    if (rule.entry.approval === null) {
      err(
        path,
        `approvals: \`${call.tool}\` has no \`require_approval\` (allowlist entry \`${rule.entry.pattern}\` of server \`${rule.server}\`): its calls are made without asking`,
        "key",
      );
      return null;
    }
    ownTimeout = rule.entry.approval.timeoutS;
  }
  const items = Array.isArray(value) ? value : [value];
  const decisions: ApprovalDecision[] = [];
  items.forEach((item, j) => {
    const at = Array.isArray(value) ? [...path, j] : path;
    const d: ApprovalDecision | null =
      typeof item === "string"
        ? { decision: item as ApprovalDecision["decision"], comment: null, after_s: 0 }
        : isObject(item) && typeof item.decision === "string"
          ? {
              decision: item.decision as ApprovalDecision["decision"],
              comment: typeof item.comment === "string" ? item.comment : null,
              after_s: typeof item.after_s === "number" ? item.after_s : 0,
            }
          : null;
    if (d === null || !(DECISIONS as readonly string[]).includes(d.decision)) return; // the schema check reported it
    if (d.decision === "timeout" && ownTimeout === null) {
      warn(
        typeof item === "string" ? at : [...at, "decision"],
        `\`${key}\` has no timeout of its own: \`timeout\` waits for the run's deadline, and the run fails \`timeout\``,
      );
    }
    decisions.push(d);
  });
  if (decisions.length !== items.length) return null;
  return { decisions, repeat: !Array.isArray(value) };
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

/**
 * `request.headers`: the workflow must record them (`invoke.headers`, SPEC section 5); without a
 * declaration the run cannot read them.
 */
function checkRequestHeaders(
  wf: CompiledWorkflow,
  headers: Record<string, string>,
  path: DataPath,
  err: Report,
  warn: Report,
): void {
  const declared = wf.invoke.headers;
  if (declared.length === 0) {
    warn(
      path,
      `\`request.headers\` has no effect: workflow \`${wf.name}\` records no request headers`,
      "key",
    );
    return;
  }
  const names = declared.map((h) => h.name.toLowerCase());
  for (const name of Object.keys(headers)) {
    if (!names.includes(name.toLowerCase())) {
      err(
        [...path, name],
        `header \`${name}\` is not in \`${wf.name}\`'s \`invoke.headers\`${hint(name, names)}`,
        "key",
      );
    }
  }
}
