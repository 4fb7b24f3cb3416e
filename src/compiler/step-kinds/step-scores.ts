/**
 * `score:` on any step and `variants:` on an agent step (docs/file-format.md, "Scores" and
 * "Variants"): at most 8 scorers a step, each named (letters, digits, `_`, unique on the step) and
 * either an `expr` (JMESPath over `{output, params, step}`) or a `judge` (an agent whose output
 * schema requires `score`, a number, and may have `reason`, a string; its params templates over the
 * same), with an optional `sample` (0..1). Variants: named arms with weights (some positive), each
 * replacing the agent (same params schema and output schema as the step's) and/or the model group.
 */
import type { CompiledScorer, CompiledVariants, JsonSchema, Template } from "../../bundle.ts";
import { hint } from "../../common/did-you-mean.ts";
import { isObject } from "../../common/guards.ts";
import type { ResolvedAgent } from "../agents.ts";
import { scopedExpression, scopedTemplate } from "../scoped-templates.ts";
import type { DataPath } from "../yaml-source.ts";
import { type StepCompileContext, stepPath } from "./step-base.ts";

export const MAX_SCORERS = 8;
const NAME = /^[A-Za-z0-9_]{1,64}$/;
export const SCORE_ROOTS = ["output", "params", "step"] as const;

type Obj = Record<string, unknown>;

export function compileScores(i: number, s: Obj, c: StepCompileContext): CompiledScorer[] | null {
  if (!Array.isArray(s.score)) return null;
  const label = c.label(i);
  const at = (...rest: Array<string | number>): DataPath => stepPath(i, "score", ...rest);
  const report = (path: DataPath, msg: string, part?: "key" | "value") => c.err(path, msg, part);
  const ctx = { stepIds: c.idSet as Set<string> };
  if (s.score.length > MAX_SCORERS) c.err(at(MAX_SCORERS), `${label}: at most ${MAX_SCORERS} scorers a step`);
  const out: CompiledScorer[] = [];
  const seen = new Set<string>();
  s.score.slice(0, MAX_SCORERS).forEach((raw, j) => {
    if (!isObject(raw)) return;
    const name = typeof raw.name === "string" ? raw.name : "";
    if (!NAME.test(name)) {
      c.err(at(j, "name"), `${label}: a scorer's \`name\` is 1 to 64 letters, digits and \`_\``);
      return;
    }
    if (seen.has(name)) c.err(at(j, "name"), `${label}: scorer \`${name}\` is named twice`);
    seen.add(name);
    const sample = raw.sample === undefined ? 1 : raw.sample;
    if (typeof sample !== "number" || sample < 0 || sample > 1)
      c.err(at(j, "sample"), `${label}: \`sample\` is a fraction from 0 to 1`);
    const hasExpr = typeof raw.expr === "string";
    const hasJudge = isObject(raw.judge);
    if (hasExpr === hasJudge) {
      c.err(at(j), `${label}: scorer \`${name}\` takes exactly one of \`expr\` and \`judge\``, "key");
      return;
    }
    const where = `${label}: scorer \`${name}\``;
    if (hasExpr) {
      const expr = scopedExpression(
        raw.expr as string,
        at(j, "expr"),
        where,
        where,
        SCORE_ROOTS,
        ctx,
        report,
      );
      if (expr !== null) out.push({ name, expr, sample: typeof sample === "number" ? sample : 1 });
      return;
    }
    const judge = raw.judge as Obj;
    const resolved =
      typeof judge.agent === "string" ? c.agents.resolve(judge.agent, c.file, at(j, "judge", "agent")) : null;
    if (typeof judge.agent !== "string")
      c.err(at(j, "judge"), `${where}: \`judge.agent\` names the judging agent file`, "key");
    if (resolved && !judgesScore(resolved.agent.outputSchema)) {
      c.err(
        at(j, "judge", "agent"),
        `${where}: the judge's \`output.schema\` must require \`score\` (a number from 0 to 1) and may have \`reason\` (a string)`,
      );
    }
    const params: Template =
      judge.params === undefined
        ? { t: "lit", v: {} }
        : scopedTemplate(
            judge.params,
            at(j, "judge", "params"),
            `${where}: \`judge.params\``,
            SCORE_ROOTS,
            ctx,
            report,
          );
    if (resolved)
      out.push({
        name,
        judge: { agent: resolved.key, params },
        sample: typeof sample === "number" ? sample : 1,
      });
  });
  return out.length > 0 ? out : null;
}

function judgesScore(schema: JsonSchema | null): boolean {
  if (!isObject(schema)) return false;
  const props = isObject(schema.properties) ? schema.properties : {};
  const score = isObject(props.score) ? props.score : null;
  const reason = props.reason === undefined ? null : isObject(props.reason) ? props.reason : false;
  return (
    Array.isArray(schema.required) &&
    schema.required.includes("score") &&
    score !== null &&
    (score.type === "number" || score.type === "integer") &&
    (reason === null || (reason !== false && reason.type === "string"))
  );
}

/** `variants:` of agent step `i` whose agent is `own`. */
export function compileVariants(
  i: number,
  s: Obj,
  c: StepCompileContext,
  own: ResolvedAgent | null,
): CompiledVariants | null {
  const v = s.variants;
  if (!isObject(v)) return null;
  const label = c.label(i);
  const at = (...rest: Array<string | number>): DataPath => stepPath(i, "variants", ...rest);
  const arms: CompiledVariants["arms"] = [];
  const names = new Set<string>();
  (Array.isArray(v.arms) ? v.arms : []).forEach((raw, j) => {
    if (!isObject(raw)) return;
    const name = typeof raw.name === "string" ? raw.name : "";
    if (!NAME.test(name)) {
      c.err(at("arms", j, "name"), `${label}: an arm's \`name\` is 1 to 64 letters, digits and \`_\``);
      return;
    }
    if (names.has(name)) c.err(at("arms", j, "name"), `${label}: arm \`${name}\` is named twice`);
    names.add(name);
    const weight = raw.weight;
    if (!(Number.isInteger(weight) && (weight as number) >= 0))
      c.err(at("arms", j, "weight"), `${label}: an arm's \`weight\` is an integer ≥ 0`);
    const model = isObject(raw.model) ? raw.model : {};
    const group = typeof model.group === "string" ? model.group : null;
    if (group !== null && !c.gateway.groups.some((g) => g.name === group)) {
      c.err(
        at("arms", j, "model", "group"),
        `${label}: unknown model group \`${group}\`${hint(
          group,
          c.gateway.groups.map((g) => g.name),
        )}`,
      );
    }
    let agent: string | null = null;
    if (typeof raw.agent === "string") {
      const resolved = c.agents.resolve(raw.agent, c.file, at("arms", j, "agent"));
      if (resolved && own && !sameContract(resolved, own)) {
        c.err(
          at("arms", j, "agent"),
          `${label}: arm \`${name}\`'s agent must take the same params and have the same \`output.schema\` as the step's agent`,
        );
      }
      agent = resolved?.key ?? null;
    }
    arms.push({
      name,
      weight: Number.isInteger(weight) ? (weight as number) : 0,
      agent,
      group,
      maxTokens: typeof model.max_tokens === "number" ? model.max_tokens : null,
    });
  });
  if (arms.length === 0) {
    c.err(at(), `${label}: \`variants\` needs at least one arm`, "key");
    return null;
  }
  if (!arms.some((a) => a.weight > 0))
    c.err(at("arms"), `${label}: at least one arm needs a weight above 0`, "key");
  const key = v.key === undefined ? null : c.template(i, v.key, at("key"));
  return { key, arms };
}

function sameContract(a: ResolvedAgent, b: ResolvedAgent): boolean {
  const canon = (x: unknown): string =>
    JSON.stringify(x, (_k, val) => (isObject(val) ? Object.fromEntries(Object.entries(val).sort()) : val));
  return (
    canon(a.agent.paramsSchema ?? null) === canon(b.agent.paramsSchema ?? null) &&
    canon(a.agent.outputSchema) === canon(b.agent.outputSchema)
  );
}
