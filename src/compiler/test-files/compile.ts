/**
 * A mistake in a `*.test.yaml` file should be a build error with `file:line:col`, like a mistake
 * in a workflow, not a confusing failure when the test runs (docs/workflow-tests.md). This module
 * finds the test files and compiles each one against the compiled workflows; the checks of each
 * part of a case live beside it.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { Bundle, CompiledWorkflow, JsonObject } from "../../bundle.ts";
import { hint } from "../../common/did-you-mean.ts";
import { isObject } from "../../common/guards.ts";
import type { DiagnosticSink } from "../diagnostics.ts";
import { checkAgainstSchema, type FormatSchema } from "../structure-check.ts";
import type { DataPath, SourceFile } from "../yaml-source.ts";
import { compileApproval } from "./approvals.ts";
import { checkCaseInputs } from "./case-inputs.ts";
import { compileExpect } from "./expectations.ts";
import { compileMocks } from "./mocks.ts";
import type { TestCase, TestSuite } from "./suite.ts";

export const TEST_SCHEMA: FormatSchema = JSON.parse(
  readFileSync(new URL("../../../schema/test.schema.json", import.meta.url), "utf8"),
);

type Obj = Record<string, unknown>;

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

    checkCaseInputs(bundle, w, tc, at, err, warn);
    compileMocks(bundle, w, raw, tc, at, err, warn);

    // ---- approvals -------------------------------------------------------------------------
    if (isObject(raw.approvals)) {
      for (const [key, value] of Object.entries(raw.approvals)) {
        const spec = compileApproval(bundle, w, key, value, at("approvals", key), err, warn);
        if (spec) tc.approvals[key] = spec;
      }
    }

    compileExpect(bundle, w, tc, at, err);
  });
  return suite;
}

function stringValues(o: Obj): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(o)) if (typeof v === "string") out[k] = v;
  return out;
}
