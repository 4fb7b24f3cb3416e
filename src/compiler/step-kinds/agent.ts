/**
 * The `agent` step kind: which agent (a local file or `core/…`), which model group, its params
 * (a secret handed to a param that goes to the model provider is warned about), `max_tokens`,
 * `confidence_threshold`; warnings where spend is not capped.
 */
import type { Template } from "../../bundle.ts";
import { hint } from "../../common/did-you-mean.ts";
import { isObject } from "../../common/guards.ts";
import { secretReads } from "../caller-host.ts";
import { unpricedModels } from "../gateway.ts";
import type { StepKindCompiler } from "./step-base.ts";
import { stepPath } from "./step-base.ts";
import { compileVariants } from "./step-scores.ts";

export const agentStep: StepKindCompiler<"agent"> = {
  compile(i, s, base, c) {
    const at = (...rest: Array<string | number>) => stepPath(i, ...rest);
    const label = c.label(i);
    const resolved = typeof s.agent === "string" ? c.agents.resolve(s.agent, c.file, at("agent")) : null;
    if (isObject(s.params)) {
      for (const nested of ["agent", "server"]) {
        if (isObject(s.params[nested])) {
          c.err(
            at("params", nested),
            `${label}: nested \`params.${nested}\` is the old ktsu format; put the agent's parameters directly under \`params\``,
            "key",
          );
        }
      }
    }
    const model = isObject(s.model) ? s.model : {};
    const stepGroup = typeof model.group === "string" ? model.group : null;
    if (stepGroup !== null && !c.gateway.groups.some((g) => g.name === stepGroup)) {
      c.err(
        at("model", "group"),
        `${label}: unknown model group \`${stepGroup}\`${hint(
          stepGroup,
          c.gateway.groups.map((g) => g.name),
        )} (groups are declared in workflows/gateway.yaml)`,
      );
    }
    const groupName = stepGroup ?? resolved?.agent.group ?? c.gateway.groups[0]?.name ?? null;
    const group = c.gateway.groups.find((g) => g.name === groupName);
    if (groupName === null) {
      c.err(
        at("agent"),
        c.hasGatewayFile
          ? `${label}: no model group to run on; add one under \`model_groups\` in gateway.yaml`
          : `${label}: agent steps need workflows/gateway.yaml with at least one model group`,
      );
    } else if (group && c.underBudget) {
      const unpriced = unpricedModels(group);
      if (unpriced.length > 0) {
        c.err(
          stepGroup !== null ? at("model", "group") : at("agent"),
          `${label}: model group \`${group.name}\` has no pricing for ${unpriced.map((m) => `\`${m}\``).join(", ")}, so \`cost_budget_usd\` cannot be enforced; add \`pricing\` in gateway.yaml`,
        );
      }
    }
    if (!c.underBudget) {
      c.warn(
        at("agent"),
        `${label} calls an LLM but workflow \`${c.name}\` has no \`model_policy.cost_budget_usd\`: its spend is not capped`,
      );
    }
    if (typeof s.confidence_threshold === "number" && resolved?.agent.builtin === "chat") {
      c.warn(
        at("confidence_threshold"),
        `${label}: \`core/chat\` answers text, so it never reports \`ktsu_confidence\` (counted as 0) and the step always fails \`low_confidence\`; use \`core/classify\` or a local agent whose output declares \`ktsu_confidence\``,
      );
    }
    const params =
      s.params === undefined ? ({ t: "lit", v: {} } as Template) : c.template(i, s.params, at("params"));
    if (resolved && params.t === "obj") {
      // A secret handed to an agent param the agent does not mark `secret: true` goes to the model
      // provider (docs/agents-and-tools.md: secret params are for tool servers only).
      const marked = new Set(resolved.agent.secretParams ?? []);
      for (const [key, value] of params.entries) {
        if (marked.has(key)) continue;
        const leaked = secretReads(value, c.secretEnv);
        if (leaked.length === 0) continue;
        const agentName =
          resolved.agent.builtin === null
            ? `agent \`${resolved.agent.name}\``
            : `\`core/${resolved.agent.builtin}\``;
        c.warn(
          at("params", key),
          `${label}: param \`${key}\` carries secret ${leaked.map((n) => `\`env.${n}\``).join(", ")}, which ${agentName} sends to the model provider (masked only in records); ${resolved.agent.builtin === null ? `mark \`${key}\` \`secret: true\` in the agent's \`params.schema\` if it is meant for a tool server` : "built-in agents send every param to the model"}`,
        );
      }
    }
    const maxTokens = typeof model.max_tokens === "number" ? model.max_tokens : (resolved?.maxTokens ?? null);
    const variants = compileVariants(i, s, c, resolved);
    return {
      ...base,
      kind: "agent",
      agent: resolved?.key ?? "",
      params,
      group: stepGroup,
      maxTokens,
      ...(typeof s.confidence_threshold === "number" ? { confidenceThreshold: s.confidence_threshold } : {}),
      ...(s.stream === true ? { stream: true } : {}),
      ...(variants ? { variants } : {}),
    };
  },
};
