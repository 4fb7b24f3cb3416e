/**
 * `npm run test:workflows`: compiles a workflows directory (test files included), runs every
 * selected case and prints each case's name with its result; a failing expectation is printed as
 * `file:line:col: what: expected …, got …`, like a compiler error. Every line goes through a
 * masker that knows the secrets of every case, so no secret reaches the output.
 */
import { isAbsolute, relative, resolve } from "node:path";
import type { Bundle } from "../bundle.ts";
import { compileProject } from "../compiler/index.ts";
import type { TestCase, TestSuite } from "../compiler/test-files/suite.ts";
import { createMasker } from "../engine/mask.ts";
import { collectSecrets } from "../engine/secrets.ts";
import { residencyOf } from "../run/jurisdiction.ts";
import { checkExpectations, type Failure } from "./expectations.ts";
import { caseRunId, runCase } from "./run-case.ts";

export interface RunOptions {
  /** Test files or directories to run (absolute); empty: every test file of the project. */
  only: string[];
  write(line: string): void;
}

export interface Summary {
  files: number;
  cases: number;
  passed: number;
  failed: number;
  /** Compile errors (of any file); when there are any, no case runs. */
  errors: number;
}

function within(file: string, target: string): boolean {
  if (file === target) return true;
  const rel = relative(target, file);
  return rel !== "" && !rel.startsWith("..") && !isAbsolute(rel);
}

function duration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = ms / 1000;
  if (s < 60) return `${Number(s.toFixed(1))} s`;
  const m = Math.floor(s / 60);
  if (m >= 60) {
    const h = Math.floor(m / 60);
    return m % 60 === 0 ? `${h} h` : `${h} h ${m % 60} min`;
  }
  const rest = Math.round(s - m * 60);
  return rest === 0 ? `${m} min` : `${m} min ${rest} s`;
}

/** Runs the test cases of the project in `workflowsDir`. */
export async function runWorkflowTests(workflowsDir: string, opts: RunOptions): Promise<Summary> {
  const summary: Summary = { files: 0, cases: 0, passed: 0, failed: 0, errors: 0 };
  const result = compileProject(workflowsDir);
  let write = opts.write;
  const selected = (abs: string) => opts.only.length === 0 || opts.only.some((t) => within(abs, resolve(t)));
  for (const d of result.diagnostics) {
    // Workflow warnings belong to `npm run build`; here only what concerns the tests that run.
    if (d.severity === "error" || (d.file.endsWith(".test.yaml") && selected(resolve(d.file)))) write(d.text);
  }
  summary.errors = result.diagnostics.filter((d) => d.severity === "error").length;
  if (summary.errors > 0 || !result.bundle) return summary;
  const bundle = result.bundle;

  const suites = result.tests.filter((s) => selected(s.file.abs));
  for (const target of opts.only) {
    if (!suites.some((s) => within(s.file.abs, resolve(target)))) {
      const rel = relative(process.cwd(), target);
      write(
        `${rel === "" || rel.startsWith("..") || isAbsolute(rel) ? target : rel}: no *.test.yaml file here`,
      );
      summary.errors++;
    }
  }
  // One masker for everything printed: any case's secret is masked in every line.
  const secrets: string[] = [];
  for (const s of suites) {
    const wf = s.workflowKey ? bundle.workflows[s.workflowKey] : undefined;
    if (wf) for (const tc of s.cases) secrets.push(...collectSecrets(bundle, wf, tc.env).values);
  }
  const masker = createMasker(secrets);
  write = (line) => opts.write(masker.maskText(line));

  for (const suite of suites) {
    summary.files++;
    const wf = suite.workflowKey ? bundle.workflows[suite.workflowKey] : undefined;
    write(`${suite.file.display} (${wf?.name ?? "?"})`);
    for (const tc of suite.cases) {
      summary.cases++;
      const ok = await runOne(bundle, suite, tc, write);
      if (ok) summary.passed++;
      else summary.failed++;
    }
  }
  return summary;
}

async function runOne(bundle: Bundle, suite: TestSuite, tc: TestCase, write: (line: string) => void) {
  const file = suite.file;
  const where = (path: ReadonlyArray<string | number>) => {
    const p = file.at(path);
    return `${file.display}:${p.line}:${p.col}`;
  };
  const started = performance.now();
  let failures: Failure[];
  let virtual = "";
  try {
    const wf = bundle.workflows[suite.workflowKey as string];
    const runId = caseRunId(file.key, tc, wf ? residencyOf(wf) : null);
    const run = await runCase(bundle, suite.workflowKey as string, tc, runId);
    if (run.log.unmocked.length > 0) {
      failures = [...new Set(run.log.unmocked)].map((m) => ({
        at: [...tc.path, "mocks"],
        message: `unmocked_step: ${m}`,
        detail: [],
      }));
    } else {
      failures = checkExpectations(tc, run);
    }
    if (run.virtualMs >= 1000) virtual = `, ${duration(run.virtualMs)} virtual`;
  } catch (e) {
    failures = [{ at: tc.path, message: e instanceof Error ? e.message : String(e), detail: [] }];
  }
  // In the order they are written in the file.
  failures.sort((a, b) => {
    const pa = file.at(a.at);
    const pb = file.at(b.at);
    return pa.line - pb.line || pa.col - pb.col;
  });
  const real = duration(performance.now() - started);
  if (failures.length === 0) {
    write(`  ✓ ${tc.name} (${real}${virtual})`);
    return true;
  }
  write(`  ✗ ${tc.name} (${real}${virtual})`);
  for (const f of failures) {
    write(`    ${where(f.at)}: ${f.message}`);
    for (const line of f.detail) write(`      ${line}`);
  }
  return false;
}
