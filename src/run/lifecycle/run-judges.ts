/**
 * A run's judges (docs/file-format.md, "Scores"): after the run has answered, each `judge` scorer of
 * a completed step whose sample takes this run (by run id) asks its agent, through the gateway and
 * with the run's masking, for `{score, reason}`. Never during the run (the answer waits for no
 * judge) and never failing it: a judge that fails, answers something that is no score, or would pass
 * `model_policy.score_budget_usd` records an error on its score. The run's document keeps what they
 * said and cost, in one write; an eviction before that write only means the judges are asked again.
 */
import type { AgentStep, CompiledStep, CompiledWorkflow, Json, JsonObject } from "../../bundle.ts";
import { isObject } from "../../common/guards.ts";
import { createLedger } from "../../engine/budget.ts";
import type { Masker } from "../../engine/mask.ts";
import { sampled, scoreValue } from "../../engine/scores.ts";
import { stringEnv } from "../../engine/secrets.ts";
import { emptyMetrics, type StepContext, type StepRecord } from "../../engine/types.ts";
import type { JudgedScore, RunDoc } from "../run-doc.ts";
import type { LifecycleRuntime } from "./run-engine.ts";

/** What judging one run may cost when its workflow says nothing (`model_policy.score_budget_usd`). */
export const DEFAULT_SCORE_BUDGET_USD = 0.05;
/** How long one judge may take. */
const JUDGE_TIMEOUT_MS = 60_000;

interface DueJudge {
  path: string;
  name: string;
  agent: string;
  params: AgentStep["params"];
  output: Json;
}

/** The judges this run owes: completed steps' `judge` scorers its sample takes, not judged yet. */
export function judgesDue(doc: RunDoc, records: ReadonlyMap<string, StepRecord>, every = false): DueJudge[] {
  if (doc.status !== "complete" && doc.status !== "failed" && doc.status !== "canceled") return [];
  if (doc.judged?.done) return [];
  const wf = doc.def.workflows[doc.workflow_key];
  if (!wf || !hasJudges(doc, wf)) return [];
  const out: DueJudge[] = [];
  for (const [path, rec] of records) {
    if (rec.status !== "complete") continue;
    const step = stepAt(doc, wf, path);
    for (const s of step?.score ?? []) {
      if (!s.judge || (!every && !sampled(s.sample, doc.run_id, path, s.name))) continue;
      out.push({ path, name: s.name, agent: s.judge.agent, params: s.judge.params, output: rec.output });
    }
  }
  return out;
}

function hasJudges(doc: RunDoc, wf: CompiledWorkflow, depth = 0): boolean {
  return wf.steps.some((s) => {
    if (s.score?.some((x) => x.judge)) return true;
    const child = s.kind === "workflow" && depth < 10 ? doc.def.workflows[s.workflow] : undefined;
    return child ? hasJudges(doc, child, depth + 1) : false;
  });
}

/** The compiled step at a record path (`parent/child`; a fan-out item's is its step's). */
function stepAt(doc: RunDoc, wf: CompiledWorkflow, path: string): CompiledStep | null {
  let current: CompiledWorkflow | undefined = wf;
  let step: CompiledStep | null = null;
  for (const part of path.split("/")) {
    if (/^\d+$/.test(part)) continue;
    step = current?.steps.find((s) => s.id === part) ?? null;
    if (!step) return null;
    current = step.kind === "workflow" ? doc.def.workflows[step.workflow] : undefined;
  }
  return step;
}

/** Asks every judge due, in turn, under one budget; what they said and what they cost. */
export async function runJudges(
  doc: RunDoc,
  records: ReadonlyMap<string, StepRecord>,
  runtime: LifecycleRuntime,
  masker: Masker,
  every = false,
): Promise<{ scores: JudgedScore[]; cost_usd: number }> {
  const wf = doc.def.workflows[doc.workflow_key] as CompiledWorkflow;
  const due = judgesDue(doc, records, every);
  const budget = createLedger(wf.policy.scoreBudgetUsd ?? DEFAULT_SCORE_BUDGET_USD);
  const step: JsonObject = {};
  for (const s of wf.steps) step[s.id] = records.get(s.id)?.output ?? null;
  const scores: JudgedScore[] = [];
  let cost = 0;
  for (const j of due) {
    const at = () => new Date(runtime.clock.now()).toISOString();
    const metrics = emptyMetrics();
    const judge: AgentStep = {
      // The judge's path (`answer/judge/helpful`): a workflow test mocks it by that key.
      id: `${j.path}/judge/${j.name}`,
      deps: [],
      ancestors: [],
      condition: null,
      kind: "agent",
      agent: j.agent,
      params: j.params,
      group: null,
      maxTokens: null,
    };
    const ctx: StepContext = {
      bundle: doc.def,
      runId: doc.run_id,
      path: judge.id,
      workflow: wf,
      scope: { params: doc.params, env: {}, step, output: j.output },
      signal: AbortSignal.timeout(JUDGE_TIMEOUT_MS),
      deadline: runtime.clock.now() + JUDGE_TIMEOUT_MS,
      env: stringEnv(runtime.env),
      fetch: runtime.fetch,
      metrics,
      budget,
      ai: runtime.ai,
      clock: runtime.clock,
      holdsSecret: (text) => masker.maskText(text) !== text,
    };
    try {
      const said = await runtime.executors.agent(judge, ctx);
      const value = scoreValue(isObject(said) ? (said.score ?? null) : null);
      const reason = isObject(said) && typeof said.reason === "string" ? masker.maskText(said.reason) : null;
      scores.push({ step: j.path, name: j.name, ...value, reason, at: at() });
    } catch (e) {
      const message =
        e instanceof Error
          ? `${(e as { code?: string }).code ?? "judge_failed"}: ${e.message}`
          : "judge_failed";
      scores.push({
        step: j.path,
        name: j.name,
        value: null,
        reason: null,
        error: masker.maskText(message),
        at: at(),
      });
    }
    cost += metrics.cost_usd;
  }
  return { scores, cost_usd: Math.round(cost * 1e12) / 1e12 };
}
