/**
 * The statistics of a workflow's scores (docs/http-api.md, "Scores"), pure: from its listed runs'
 * scores (each with its workflow version and arm), one entry per step, scorer, version and arm
 * (count, mean, p10/p50/p90), each arm compared with the first arm of its step over every version
 * (Welch's 95 % interval), and the daily mean per scorer and arm for the chart.
 */
import type { CompiledWorkflow } from "../../bundle.ts";
import { summary, welch } from "../../engine/stats.ts";
import type { ListedScores } from "../listing/listing-layout.ts";

/** What a listed run says for its scores. */
export interface ScoredRun {
  created_at: string;
  scores?: ListedScores;
}

export interface ScoreReport {
  workflow: string;
  since: string;
  until: string;
  /** How many runs of the window were read (at most MAX_RUNS, newest first). */
  runs: number;
  scores: Array<{
    step: string;
    scorer: string;
    version: string | null;
    arm: string | null;
    count: number;
    mean: number;
    p10: number;
    p50: number;
    p90: number;
  }>;
  comparisons: Array<{
    step: string;
    scorer: string;
    arm: string;
    control: string;
    diff: number;
    ci95: [number, number];
    significant: boolean;
  }>;
  /** The daily mean of each scorer and arm (UTC days), for the chart. */
  daily: Array<{ scorer: string; arm: string | null; day: string; mean: number; count: number }>;
}

/** The report of the listed runs `runs` (pure: tested on its own). */
export function report(
  wf: CompiledWorkflow,
  since: number,
  until: number,
  runs: readonly ScoredRun[],
): ScoreReport {
  const groups = new Map<
    string,
    { step: string; scorer: string; version: string | null; arm: string | null; values: number[] }
  >();
  const pooled = new Map<string, number[]>();
  const days = new Map<string, { scorer: string; arm: string | null; day: string; values: number[] }>();
  for (const r of runs) {
    const version = r.scores?.v ?? null;
    const day = r.created_at.slice(0, 10);
    for (const [step, scorer, value, arm] of r.scores?.s ?? []) {
      const key = JSON.stringify([step, scorer, version, arm]);
      const g = groups.get(key) ?? { step, scorer, version, arm, values: [] };
      g.values.push(value);
      groups.set(key, g);
      const pool = JSON.stringify([step, scorer, arm]);
      pooled.set(pool, [...(pooled.get(pool) ?? []), value]);
      const dkey = JSON.stringify([scorer, arm, day]);
      const d = days.get(dkey) ?? { scorer, arm, day, values: [] };
      d.values.push(value);
      days.set(dkey, d);
    }
  }
  const scores = [...groups.values()]
    .map(({ values, ...g }) => ({ ...g, ...summary(values) }))
    .sort((a, b) =>
      (a.step + a.scorer + (a.version ?? "") + (a.arm ?? "")).localeCompare(
        b.step + b.scorer + (b.version ?? "") + (b.arm ?? ""),
      ),
    );
  const comparisons: ScoreReport["comparisons"] = [];
  for (const step of wf.steps) {
    if (step.kind !== "agent" || !step.variants) continue;
    const [control, ...others] = step.variants.arms.map((a) => a.name);
    if (!control) continue;
    const scorers = new Set(scores.filter((s) => s.step === step.id).map((s) => s.scorer));
    for (const scorer of scorers) {
      const base = pooled.get(JSON.stringify([step.id, scorer, control])) ?? [];
      for (const arm of others) {
        const values = pooled.get(JSON.stringify([step.id, scorer, arm]));
        if (!values || base.length === 0) continue;
        comparisons.push({ step: step.id, scorer, arm, control, ...welch(values, base) });
      }
    }
  }
  const daily = [...days.values()]
    .map(({ values, ...d }) => ({ ...d, mean: summary(values).mean, count: values.length }))
    .sort((a, b) => (a.scorer + (a.arm ?? "") + a.day).localeCompare(b.scorer + (b.arm ?? "") + b.day));
  return {
    workflow: wf.name,
    since: new Date(since).toISOString(),
    until: new Date(until).toISOString(),
    runs: runs.length,
    scores,
    comparisons,
    daily,
  };
}
