/**
 * Compares a case's `expect` with what its run did. Matching is by subset: an expected object
 * may leave out keys the actual value has; arrays match item by item and must have the same
 * length; numbers match within float rounding. Every mismatch names the data path of the
 * expectation in the test file, so the runner can print `file:line:col` of the exact value that
 * did not match, with the expected and the actual value.
 *
 * Expected values are masked with the case's secrets before they are compared or printed: the
 * actual values are masked (as stored), and a secret written in a test file must not reach the
 * output either.
 */
import { compile, TreeInterpreter } from "@jmespath-community/jmespath";
import type { Json, JsonObject } from "../bundle.ts";
import { isObject } from "../common/guards.ts";
import type { TestCase } from "../compiler/test-files/suite.ts";
import type { DataPath } from "../compiler/yaml-source.ts";
import { evaluate, isTruthy } from "../engine/expressions.ts";
import type { CaseRun } from "./run-case.ts";

export interface Failure {
  /** Data path (in the test file) of the expectation that failed. */
  at: DataPath;
  message: string;
  /** More lines (a compact diff), printed under the message. */
  detail: string[];
}

type Path = Array<string | number>;

interface Mismatch {
  path: Path;
  problem: string;
}

const MAX_SHOWN = 160;

/** `actual` cut down to the shape of `expected` (the keys it names), so a diff shows like with like. */
export function projectOnto(expected: Json, actual: Json | undefined): Json | undefined {
  if (isObject(expected) && isObject(actual)) {
    const out: JsonObject = {};
    for (const key of Object.keys(expected)) {
      const v = actual[key];
      if (Object.hasOwn(actual, key)) out[key] = projectOnto(expected[key] as Json, v) ?? null;
    }
    return out;
  }
  if (Array.isArray(expected) && Array.isArray(actual)) {
    return actual.map((v, i) => (i < expected.length ? (projectOnto(expected[i] as Json, v) ?? null) : v));
  }
  return actual;
}

/** Compact JSON, cut at MAX_SHOWN characters. */
export function show(v: Json | undefined): string {
  if (v === undefined) return "nothing";
  const text = JSON.stringify(v);
  return text.length > MAX_SHOWN ? `${text.slice(0, MAX_SHOWN - 1)}…` : text;
}

function kindOf(v: Json | undefined): string {
  if (v === undefined || v === null) return "null";
  if (Array.isArray(v)) return "a list";
  return typeof v === "object" ? "an object" : typeof v;
}

function numbersEqual(a: number, b: number): boolean {
  return a === b || Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(a), Math.abs(b));
}

/** Every place where `actual` does not contain `expected`. */
export function subsetMismatches(expected: Json, actual: Json | undefined, path: Path = []): Mismatch[] {
  if (isObject(expected)) {
    if (!isObject(actual)) return [{ path, problem: `expected an object, got ${show(actual)}` }];
    const out: Mismatch[] = [];
    for (const [key, value] of Object.entries(expected)) {
      if (!Object.hasOwn(actual, key)) {
        out.push({ path: [...path, key], problem: `expected ${show(value)}, got no \`${key}\`` });
      } else {
        out.push(...subsetMismatches(value, actual[key], [...path, key]));
      }
    }
    return out;
  }
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual)) return [{ path, problem: `expected a list, got ${show(actual)}` }];
    const out: Mismatch[] = [];
    if (expected.length !== actual.length) {
      out.push({
        path,
        problem: `expected ${expected.length} item${expected.length === 1 ? "" : "s"}, got ${actual.length}: ${show(actual)}`,
      });
    }
    for (let i = 0; i < Math.min(expected.length, actual.length); i++) {
      out.push(...subsetMismatches(expected[i] as Json, actual[i], [...path, i]));
    }
    return out;
  }
  const same =
    typeof expected === "number" && typeof actual === "number"
      ? numbersEqual(expected, actual)
      : expected === actual;
  if (same) return [];
  const problem =
    kindOf(expected) === kindOf(actual) || actual === undefined || actual === null
      ? `expected ${show(expected)}, got ${show(actual)}`
      : `expected ${show(expected)}, got ${kindOf(actual)} ${show(actual)}`;
  return [{ path, problem }];
}

/** `expect.steps.names.output.result[0]`: a data path as the user wrote it, relative to the case. */
export function label(path: DataPath): string {
  let out = "";
  for (const p of path) {
    if (typeof p === "number") out += `[${p}]`;
    else if (/^[A-Za-z_][A-Za-z0-9_-]*$/.test(p)) out += out === "" ? p : `.${p}`;
    else out += `[${JSON.stringify(p)}]`;
  }
  return out;
}

/** Header names are case-insensitive: read the actual headers under the names the test wrote. */
function alignHeaders(expected: Json, actual: Json): Json {
  if (!isObject(expected) || !isObject(actual) || !isObject(expected.headers) || !isObject(actual.headers)) {
    return actual;
  }
  const byLower = new Map(Object.entries(actual.headers).map(([k, v]) => [k.toLowerCase(), v]));
  const headers: JsonObject = { ...actual.headers };
  for (const name of Object.keys(expected.headers)) {
    const v = byLower.get(name.toLowerCase());
    if (v !== undefined) headers[name] = v;
  }
  return { ...actual, headers };
}

export function checkExpectations(tc: TestCase, run: CaseRun): Failure[] {
  const failures: Failure[] = [];
  const base: DataPath = [...tc.path, "expect"];
  const ex = run.masker.maskJson(tc.expect) as JsonObject;
  const env = run.envelope;

  /** Adds one failure per mismatch of `expected` in `actual`; `at` is where `expected` is written. */
  const compare = (at: DataPath, expected: Json, actual: Json | undefined, context = "") => {
    const mismatches = subsetMismatches(expected, actual);
    for (const m of mismatches) {
      failures.push({
        at: [...at, ...m.path],
        message: `${label([...at.slice(tc.path.length), ...m.path])}: ${m.problem}${context}`,
        detail: [],
      });
    }
    // A compact diff for objects and lists: the whole expectation next to the whole actual value.
    if (mismatches.length > 0 && expected !== null && typeof expected === "object") {
      const last = failures[failures.length - 1] as Failure;
      last.detail.push(`expected: ${show(expected)}`, `actual:   ${show(projectOnto(expected, actual))}`);
    }
  };
  const runContext = () => {
    if (!env.error) return "";
    const where = env.error.step ? ` at \`${env.error.step}\`` : "";
    return ` (${env.error.code}${where}: ${env.error.message})`;
  };

  // A case that expects nothing is a smoke test: it expects the run to complete.
  if (Object.keys(ex).length === 0 && env.status !== "complete") {
    failures.push({
      at: tc.path,
      message: `the run is ${env.status}${runContext()}; a case without \`expect\` expects it to complete`,
      detail: [],
    });
  }
  if (ex.status !== undefined) compare([...base, "status"], ex.status, env.status, runContext());
  // The compensations that ran, in their order (docs/workflow-tests.md).
  if (ex.compensated !== undefined) {
    const ran = (env.compensation?.steps ?? []).filter(
      (s) => s.status === "complete" || s.status === "failed",
    );
    const failed = ran
      .filter((s) => s.status === "failed")
      .map((s) => ` ${s.step}: ${s.error?.code}: ${s.error?.message}`);
    compare(
      [...base, "compensated"],
      ex.compensated,
      ran.map((s) => s.step),
      failed.length > 0 ? ` (failed:${failed.join(";")})` : "",
    );
  }
  if (ex.error !== undefined) {
    const actual = env.error as unknown as Json;
    if (typeof ex.error === "string") {
      compare(
        [...base, "error"],
        ex.error,
        env.error?.code ?? null,
        env.error ? ` (${env.error.message})` : "",
      );
    } else {
      compare([...base, "error"], ex.error, actual);
    }
  }

  if (isObject(ex.steps)) {
    for (const [path, expected] of Object.entries(ex.steps)) {
      const at: DataPath = [...base, "steps", path];
      if (tc.toolPaths.includes(path)) {
        // A tool call: what the tool received, `{server, url, headers, name, arguments}` per call.
        if (!isObject(expected)) continue;
        const calls = run.log.requests.get(path) ?? [];
        if (expected.request !== undefined) {
          const last = calls[calls.length - 1] ?? null;
          compare(
            [...at, "request"],
            expected.request,
            alignHeaders(expected.request, last),
            calls.length === 0 ? " (the tool was never called)" : "",
          );
        }
        if (Array.isArray(expected.requests)) {
          const list = expected.requests;
          compare(
            [...at, "requests"],
            list,
            calls.map((r, i) => alignHeaders(list[i] ?? null, r)),
          );
        }
        continue;
      }
      const rec = run.records.get(path);
      if (!rec) {
        failures.push({
          at,
          message: `${label(at.slice(tc.path.length))}: the step has no record (it never started)`,
          detail: [],
        });
        continue;
      }
      if (!isObject(expected)) continue;
      const requests = run.log.requests.get(path) ?? [];
      const actual: JsonObject = {
        status: rec.status,
        output: rec.output,
        error: rec.error as unknown as Json,
        metrics: rec.metrics as unknown as Json,
        request: requests[requests.length - 1] ?? null,
        requests,
        tool_calls: rec.tool_calls as unknown as Json,
        annotations: rec.annotations as unknown as Json,
      };
      for (const [field, value] of Object.entries(expected)) {
        const fieldAt = [...at, field];
        if (field === "error" && typeof value === "string") {
          compare(fieldAt, value, rec.error?.code ?? null, rec.error ? ` (${rec.error.message})` : "");
        } else if (field === "request") {
          compare(fieldAt, value, alignHeaders(value, actual.request as Json));
        } else if (field === "requests" && Array.isArray(value)) {
          compare(
            fieldAt,
            value,
            requests.map((r, i) => alignHeaders(value[i] ?? null, r)),
          );
        } else {
          const context = field === "status" && rec.error ? ` (${rec.error.code}: ${rec.error.message})` : "";
          compare(fieldAt, value, actual[field], context);
        }
      }
    }
  }

  if (ex.output !== undefined) compare([...base, "output"], ex.output, env.output, runContext());
  if (ex.response !== undefined) compare([...base, "response"], ex.response, run.response, runContext());

  if (tc.asserts.length > 0) {
    const step: JsonObject = {};
    for (const s of env.steps) step[s.id] = s.output;
    const scope: JsonObject = {
      params: run.params,
      env: run.env,
      step,
      output: env.output,
      run: env as unknown as Json,
      requests: Object.fromEntries(run.log.requests),
      approvals: run.approvals,
    };
    for (const a of tc.asserts) {
      const at: DataPath = [...base, "assert", a.index];
      // The run's values are masked, so a secret written in the assert is masked too (as in
      // every other expectation): `env.TOKEN == 'the-token'` compares *** with ***.
      const text = run.masker.maskText(a.expr);
      let value: Json;
      try {
        value = evaluate(text, scope);
      } catch (e) {
        failures.push({ at, message: `assert \`${a.source}\`: ${(e as Error).message}`, detail: [] });
        continue;
      }
      if (!isTruthy(value)) {
        failures.push({
          at,
          message: `assert \`${a.source}\` is ${show(value)}${whyFalse(text, scope)}${runContext()}`,
          detail: [],
        });
      }
    }
  }
  return failures;
}

type AstNode = { type: string; name?: string; left?: AstNode; right?: AstNode };

/**
 * For a false assert whose deciding part is a comparison (`a == b`, or the first false operand of
 * `x && a < b`): both sides' values, so the output gives the actual value next to the expected one.
 */
function whyFalse(text: string, scope: JsonObject): string {
  try {
    let node = compile(text) as unknown as AstNode;
    const value = (n: AstNode) => (TreeInterpreter.search(n as never, scope) ?? null) as Json;
    while (node.type === "AndExpression" && node.left && node.right) {
      node = isTruthy(value(node.left)) ? node.right : node.left;
    }
    if (node.type !== "Comparator" || !node.left || !node.right) return "";
    return `: left ${show(value(node.left))}, right ${show(value(node.right))}`;
  } catch {
    return "";
  }
}
