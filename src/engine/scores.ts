/**
 * Scores and variants at run time (docs/file-format.md, "Scores" and "Variants"), pure: an `expr`
 * scorer's value over `{output, params, step}` (true/false count as 1/0; anything outside 0..1 or of
 * another type is an error recorded on that score, never the run's), which runs a judge samples
 * (by run id), and which arm of a split step a key gets (a hash of the key and the step's path, so
 * the same key always gets the same arm while the weights stand, across deploys).
 */
import type { AgentStep, CompiledScorer, CompiledVariants, Json } from "../bundle.ts";
import { evaluate } from "./expressions.ts";
import { render, stringify } from "./substitute.ts";
import type { EvalScope, StepScore } from "./types.ts";

export type { StepScore };

/** A scorer's raw value as a score (0..1), or why it is not one. */
export function scoreValue(v: Json): { value: number | null; error: string | null } {
  if (v === true) return { value: 1, error: null };
  if (v === false) return { value: 0, error: null };
  if (typeof v === "number" && Number.isFinite(v) && v >= 0 && v <= 1) return { value: v, error: null };
  if (typeof v === "number") return { value: null, error: `score ${v} is outside 0..1` };
  return {
    value: null,
    error: `a score is a boolean or a number from 0 to 1, not ${v === null ? "null" : typeof v}`,
  };
}

/** The `expr` scorers of a step that completed with `output`. */
export function exprScores(
  scorers: readonly CompiledScorer[],
  data: { output: Json; params: Json; step: Json },
  at: string,
): StepScore[] {
  const out: StepScore[] = [];
  for (const s of scorers) {
    if (s.expr === undefined) continue;
    let raw: Json;
    try {
      raw = evaluate(s.expr, data as unknown as Json);
    } catch (e) {
      out.push({
        name: s.name,
        value: null,
        reason: null,
        error: e instanceof Error ? e.message : "the expression failed",
        at,
      });
      continue;
    }
    out.push({ name: s.name, reason: null, at, ...scoreValue(raw) });
  }
  return out;
}

/** FNV-1a, 32 bits: a stable hash of a string (the same everywhere, every deploy). */
export function hash32(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  // A final mix spreads keys that differ in their last characters only.
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b) >>> 0;
  h ^= h >>> 13;
  return h >>> 0;
}

/** Whether run `runId` is among the `sample` fraction a judge scores (for scorer `name` of step `path`). */
export function sampled(sample: number, runId: string, path: string, name: string): boolean {
  if (sample >= 1) return true;
  if (sample <= 0) return false;
  return hash32(`${runId}\n${path}\n${name}`) / 2 ** 32 < sample;
}

/** The arm key `key` gets at step `path`: by weight, from a hash of both. */
export function chooseArm(
  variants: CompiledVariants,
  key: string,
  path: string,
): CompiledVariants["arms"][number] {
  const total = variants.arms.reduce((n, a) => n + a.weight, 0);
  const arms = variants.arms;
  if (total <= 0) return arms[0] as CompiledVariants["arms"][number];
  let point = (hash32(`${key}\n${path}`) / 2 ** 32) * total;
  for (const arm of arms) {
    if (point < arm.weight) return arm;
    point -= arm.weight;
  }
  return arms[arms.length - 1] as CompiledVariants["arms"][number];
}

/**
 * An agent step with `variants` as its arm makes it: the arm a re-run keeps (`pinned`), else the
 * one the key (default the run id) and the step's path hash to; its agent and model group in place
 * of the step's.
 */
export function stepWithArm(
  step: AgentStep,
  path: string,
  scope: EvalScope,
  runId: string,
  pinned: string | null,
): AgentStep & { armName: string } {
  const variants = step.variants as CompiledVariants;
  let arm = pinned === null ? undefined : variants.arms.find((a) => a.name === pinned);
  if (!arm) {
    let key = runId;
    if (variants.key) {
      try {
        const k = stringify(render(variants.key, scope));
        if (k !== "") key = k;
      } catch {
        // A key that cannot be rendered falls back to the run id.
      }
    }
    arm = chooseArm(variants, key, path);
  }
  return {
    ...step,
    agent: arm.agent ?? step.agent,
    group: arm.group ?? step.group,
    maxTokens: arm.maxTokens ?? step.maxTokens,
    armName: arm.name,
  };
}
