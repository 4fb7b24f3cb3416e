/**
 * `workflow-edge eval` and `npm run eval` (docs/workflow-tests.md, "Evals"): each case of a test file
 * runs as `npm run test:workflows` runs it (its mocks, a virtual clock), or with `live` its agent
 * steps and judges ask their providers (webhooks and tools stay mocked), and its steps' scorers
 * score it: `expr` ones as the steps complete, judges after (answered by the case's mock
 * `<step>/judge/<scorer>`, or live by their provider; with neither, reported skipped). The result
 * is one row per case, step, scorer and arm; `minimums` says which scorers' means (over every case)
 * fall short.
 */
import { isAbsolute, relative, resolve } from "node:path";
import type { Bundle, CompiledWorkflow } from "../bundle.ts";
import { compileProject } from "../compiler/index.ts";
import type { TestCase } from "../compiler/test-files/suite.ts";
import { residencyOf } from "../run/jurisdiction.ts";
import { caseRunId, runCase } from "./run-case.ts";

export interface EvalRow {
  file: string;
  case: string;
  step: string;
  scorer: string;
  arm: string | null;
  value: number | null;
  /** Why there is no value: the scorer's error, or `skipped` (a judge neither mocked nor live). */
  error: string | null;
}

export interface EvalResult {
  rows: EvalRow[];
  /** Compile errors and files that are not test files (no case ran when there are compile errors). */
  problems: string[];
}

/** Each scorer's mean over every case, and the `--min` ones it falls short of. */
export interface EvalMean {
  scorer: string;
  mean: number | null;
  count: number;
  min: number | null;
  met: boolean;
}

export async function runEvals(
  workflowsDir: string,
  only: string[],
  opts: { live: boolean; env?: Record<string, string | undefined> } = { live: false },
): Promise<EvalResult> {
  const result = compileProject(workflowsDir);
  const problems = result.diagnostics.filter((d) => d.severity === "error").map((d) => d.text);
  if (!result.bundle || problems.length > 0) return { rows: [], problems };
  const bundle = result.bundle;
  const within = (file: string, target: string) => {
    const rel = relative(resolve(target), file);
    return file === resolve(target) || (rel !== "" && !rel.startsWith("..") && !isAbsolute(rel));
  };
  const suites = result.tests.filter((s) => only.length === 0 || only.some((t) => within(s.file.abs, t)));
  for (const t of only)
    if (!suites.some((s) => within(s.file.abs, t))) problems.push(`${t}: no *.test.yaml file here`);
  const rows: EvalRow[] = [];
  for (const suite of suites) {
    const wf = suite.workflowKey ? bundle.workflows[suite.workflowKey] : undefined;
    if (!wf || !suite.workflowKey) continue;
    for (const tc of suite.cases) {
      const runId = caseRunId(suite.file.key, tc, residencyOf(wf));
      const live = opts.live ? { fetch } : null;
      const run = await runCase(
        bundle,
        suite.workflowKey,
        opts.live ? liveCase(bundle, wf, tc, opts.env ?? {}) : tc,
        runId,
        live,
      );
      for (const s of run.envelope.scores) {
        const skipped = s.value === null && (s.error ?? "").startsWith("unmocked_step");
        rows.push({
          file: suite.file.display,
          case: tc.name,
          step: s.step,
          scorer: s.name,
          arm: s.variant,
          value: s.value,
          error: skipped ? "skipped" : s.error,
        });
      }
    }
  }
  return { rows, problems };
}

/** A case as `--live` runs it: no mock for its agent steps or judges, the provider keys from the environment. */
function liveCase(
  bundle: Bundle,
  wf: CompiledWorkflow,
  tc: TestCase,
  env: Record<string, string | undefined>,
): TestCase {
  const agentSteps = new Set(wf.steps.filter((s) => s.kind === "agent").map((s) => s.id));
  const mocks = Object.fromEntries(
    Object.entries(tc.mocks).filter(
      ([key, spec]) =>
        spec.kind !== "agent" || (!agentSteps.has(key.split("/")[0] ?? "") && !key.includes("/judge/")),
    ),
  );
  const keys: Record<string, string> = {};
  for (const e of bundle.gateway.env) {
    const v = env[e.name];
    if (typeof v === "string") keys[e.name] = v;
  }
  return { ...tc, mocks, env: { ...keys, ...tc.env } };
}

/** Each scorer's mean over every row with a value, held to `minimums` (scorer → least mean). */
export function evalMeans(rows: readonly EvalRow[], minimums: Record<string, number>): EvalMean[] {
  const scorers = [...new Set([...rows.map((r) => r.scorer), ...Object.keys(minimums)])].sort();
  return scorers.map((scorer) => {
    const values = rows.filter((r) => r.scorer === scorer && r.value !== null).map((r) => r.value as number);
    const mean = values.length === 0 ? null : values.reduce((a, b) => a + b, 0) / values.length;
    const min = minimums[scorer] ?? null;
    return { scorer, mean, count: values.length, min, met: min === null || (mean !== null && mean >= min) };
  });
}
