/**
 * The agent step (docs/agents-and-tools.md): renders the step's params, validates them against the
 * agent's params.schema, asks the model group for a reply, and turns the reply into the step
 * output: JSON valid against the agent's output schema, with one repair call when it is not.
 *
 * Local `*.agent.yaml` agents and the `core` built-ins share this path; a built-in only changes
 * how the prompt is made and what the output must satisfy (see `planFor`). Cost, budget,
 * retries and model fallback all live in the gateway (`completeInGroup`).
 */

import type {
  AgentStep,
  CompiledAgent,
  CompiledGateway,
  CompiledGroup,
  Json,
  JsonSchema,
} from "../bundle.ts";
import { MAX_JSON_DEPTH, nestsDeeperThan } from "../common/json-depth.ts";
import { jsonErrorMessage } from "../engine/mask.ts";
import { retryWork } from "../engine/retry.ts";
import { describeViolations, validateJson } from "../engine/schema.ts";
import { render, stringify } from "../engine/substitute.ts";
import { type StepContext, StepError, type StepExecutor } from "../engine/types.ts";
import { completeInGroup } from "../gateway/complete.ts";
import type { ChatMessage } from "../gateway/provider.ts";
import type { GroupModel } from "../gateway/select.ts";
import { applyContracts, forValidation, reservedOf } from "./output-contracts.ts";
import { ToolLoop } from "./tool-loop.ts";

/** `max_tokens` defaults to the group's `default_max_tokens`, else this. */
export const DEFAULT_MAX_TOKENS = 1024;
/** Violations quoted in an error or a repair message; the rest are counted. */
const MAX_LISTED_VIOLATIONS = 10;

/** How one agent call is asked and checked. */
interface AgentPlan {
  system: string | null;
  user: string;
  /** false: the reply text is the output (`core/chat`). */
  json: boolean;
  /** What the parsed reply must satisfy; null: any JSON. */
  schema: JsonSchema | null;
  /** Turns the validated reply into the step output. */
  output(reply: Json, text: string): Json;
}

function listViolations(violations: Array<{ path: string; message: string }>): string {
  return describeViolations(violations, MAX_LISTED_VIOLATIONS, (n) => `; and ${n} more`);
}

/** Returns violations, treating a schema the validator cannot use as a violation of the value. */
function check(schema: JsonSchema, value: Json): Array<{ path: string; message: string }> {
  try {
    return validateJson(schema, value);
  } catch (e) {
    return [
      { path: "", message: `the schema cannot be used: ${e instanceof Error ? e.message : String(e)}` },
    ];
  }
}

/** The instructions that make a model answer with bare JSON; providers without a JSON mode rely on them. */
export function jsonInstructions(schema: JsonSchema | null): string {
  if (schema === null) return "Reply with one JSON object and nothing else: no prose, no code fences.";
  return `Reply with one JSON value and nothing else: no prose, no code fences. It must be valid against this JSON Schema:\n${JSON.stringify(schema)}`;
}

function withJson(system: string | null, schema: JsonSchema | null): string {
  const rules = jsonInstructions(schema);
  return system ? `${system}\n\n${rules}` : rules;
}

/** Params marked `secret: true` in the agent's schema are for its tool servers, never for the model. */
function withoutSecretParams(params: Json, secret: string[]): Json {
  if (secret.length === 0 || typeof params !== "object" || params === null || Array.isArray(params))
    return params;
  return Object.fromEntries(Object.entries(params).filter(([k]) => !secret.includes(k)));
}

function planFor(agent: CompiledAgent, params: Json, threshold: number | null): AgentPlan {
  const p = (typeof params === "object" && params !== null && !Array.isArray(params) ? params : {}) as Record<
    string,
    Json
  >;
  switch (agent.builtin) {
    case "chat":
      return {
        system: typeof p.system === "string" ? p.system : agent.system,
        user: stringify(p.prompt ?? null),
        json: false,
        schema: null,
        output: (_reply, text) => ({ text }),
      };
    case "extract": {
      const schema = (p.schema ?? {}) as JsonSchema;
      return {
        system: withJson(agent.system, schema),
        user: stringify(p.text ?? null),
        json: true,
        schema,
        output: (reply) => reply,
      };
    }
    case "classify": {
      const labels = Array.isArray(p.labels) ? p.labels : [];
      // The label check is a schema, so a wrong label gets the same repair call as bad JSON.
      // Under a confidence_threshold the model is asked for its confidence, which the step's
      // contract reads (docs/agents-and-tools.md) and then removes: the output stays `{label}`.
      const schema: JsonSchema = {
        type: "object",
        properties: {
          label: { type: "string", enum: labels },
          ...(threshold === null ? {} : { ktsu_confidence: { type: "number", minimum: 0, maximum: 1 } }),
        },
        required: ["label"],
        additionalProperties: false,
      };
      const system =
        threshold === null
          ? agent.system
          : `${agent.system} Add "ktsu_confidence": how sure you are of the label, from 0 to 1.`;
      return {
        system: withJson(system, schema),
        user: `Labels: ${JSON.stringify(labels)}\n\nText:\n${stringify(p.text ?? null)}`,
        json: true,
        schema,
        output: (reply) => ({ label: (reply as { label: Json }).label, ...reservedOf(reply) }),
      };
    }
    case null:
      return {
        system: withJson(agent.system, agent.outputSchema),
        user: agent.user
          ? stringify(render(agent.user, { params, env: {}, step: {} }))
          : JSON.stringify(withoutSecretParams(params, agent.secretParams ?? [])),
        json: true,
        schema: agent.outputSchema,
        output: (reply) => reply,
      };
  }
}

function resolveGroup(step: AgentStep, agent: CompiledAgent, gateway: CompiledGateway): CompiledGroup {
  const name = step.group ?? agent.group;
  const group = name === null ? gateway.groups[0] : gateway.groups.find((g) => g.name === name);
  if (!group) {
    throw new StepError(
      "agent_failed",
      name === null
        ? "workflows/gateway.yaml defines no model group"
        : `no model group ${name} in gateway.yaml`,
    );
  }
  return group;
}

/**
 * Parses a model's JSON reply. Models often wrap JSON in ```json fences or a sentence; the
 * outermost object or array in the text is taken then.
 */
export function parseReply(text: string): { ok: true; value: Json } | { ok: false; error: string } {
  const fenced = /```(?:json)?\s*\n?([\s\S]*?)```/i.exec(text);
  const candidates = [text.trim()];
  if (fenced?.[1] !== undefined) candidates.push(fenced[1].trim());
  for (const [open, close] of [
    ["{", "}"],
    ["[", "]"],
  ] as const) {
    const start = text.indexOf(open);
    const end = text.lastIndexOf(close);
    if (start !== -1 && end > start) candidates.push(text.slice(start, end + 1));
  }
  let firstError = "";
  for (const c of candidates) {
    if (nestsDeeperThan(c)) {
      firstError ||= `it nests objects and arrays deeper than ${MAX_JSON_DEPTH} levels`;
      continue;
    }
    try {
      return { ok: true, value: JSON.parse(c) as Json };
    } catch (e) {
      firstError ||= jsonErrorMessage(e);
    }
  }
  return { ok: false, error: `the reply is not JSON (${firstError || "empty reply"})` };
}

/** What is wrong with a reply, or null when it is acceptable. */
function problemsWith(text: string, plan: AgentPlan): { value: Json; problems: string | null } {
  const parsed = parseReply(text);
  if (!parsed.ok) return { value: null, problems: parsed.error };
  if (plan.schema === null) return { value: parsed.value, problems: null };
  const violations = check(plan.schema, forValidation(parsed.value, plan.schema));
  return { value: parsed.value, problems: violations.length > 0 ? listViolations(violations) : null };
}

/** Validates a reply (one repair call when it is invalid) and returns the parsed value. */
async function finalAnswer(
  ctx: StepContext,
  group: CompiledGroup,
  plan: AgentPlan,
  agent: CompiledAgent,
  maxTokens: number,
  conversation: ChatMessage[],
  reply: { text: string; model: GroupModel },
): Promise<Json> {
  if (!plan.json) return plan.output(reply.text, reply.text);
  const firstCheck = problemsWith(reply.text, plan);
  if (firstCheck.problems === null) return plan.output(firstCheck.value, reply.text);

  // One repair attempt: show the model its reply and what is wrong with it (no tools offered).
  // A streaming step's listeners are told the text they saw is void; the repair streams anew.
  ctx.stream?.reset();
  const messages: ChatMessage[] = [
    ...conversation,
    { role: "assistant", content: reply.text },
    {
      role: "user",
      content: `Your reply is invalid: ${firstCheck.problems}. Reply again with only the corrected JSON.`,
    },
  ];
  const repair = await completeInGroup(
    ctx.bundle.gateway,
    group,
    { system: plan.system, messages, maxTokens, json: plan.json, jsonSchema: plan.schema },
    ctx,
    reply.model,
  );
  const repairCheck = problemsWith(repair.text, plan);
  if (repairCheck.problems === null) return plan.output(repairCheck.value, repair.text);
  throw new StepError(
    "output_schema_mismatch",
    `agent ${agent.name}: the reply is still invalid after one repair attempt: ${repairCheck.problems}`,
  );
}

/**
 * The agent step. With `retry` (docs/file-format.md) a failure of the model group (every model failed: a
 * provider error, a timeout) is tried again after a back-off, resuming from the conversation's
 * checkpoint (a tool call already made is not made again); a budget, schema or contract failure
 * never is. Default: one attempt (each provider call already retries 429/5xx/network itself).
 */
export const executeAgent: StepExecutor<AgentStep> = (step, ctx) => {
  const policy = step.retry;
  if (!policy || policy.maxAttempts <= 1) return runAgentOnce(step, ctx);
  return retryWork(
    {
      attempts: policy.maxAttempts,
      baseDelayMs: policy.backoffMs,
      maxBackoffMs: policy.maxBackoffMs,
      deadline: ctx.deadline,
      signal: ctx.signal,
      clock: ctx.clock,
      retryable: (err) => err instanceof StepError && err.code === "agent_failed",
    },
    () => runAgentOnce(step, ctx),
  );
};

const runAgentOnce: StepExecutor<AgentStep> = async (step, given) => {
  // Only a step with `stream: true` streams its answer (docs/agents-and-tools.md, "Streaming").
  const ctx: StepContext = step.stream ? given : { ...given, stream: undefined };
  const agent = ctx.bundle.agents[step.agent];
  if (!agent) throw new StepError("internal_error", `agent ${step.agent} is not in the bundle`);

  const params = render(step.params, ctx.scope);
  const invalid = check(agent.paramsSchema, params);
  if (invalid.length > 0) {
    throw new StepError(
      "invalid_input",
      `params of agent ${agent.name} are invalid: ${listViolations(invalid)}`,
    );
  }

  const gateway = ctx.bundle.gateway;
  const group = resolveGroup(step, agent, gateway);
  const plan = planFor(agent, params, step.confidenceThreshold ?? null);
  const maxTokens = step.maxTokens ?? group.defaultMaxTokens ?? DEFAULT_MAX_TOKENS;
  const servers = agent.builtin === null ? (agent.servers ?? []) : [];

  // The loop also keeps the conversation's checkpoint: without tools it is one turn.
  const loop = new ToolLoop(ctx, servers, params, group, {
    system: plan.system,
    user: plan.user,
    json: plan.json,
    schema: plan.schema,
    maxTokens,
    maxTurns: servers.length > 0 ? Math.max(1, agent.maxTurns) : 1,
    callerHostServers: step.callerHostServers,
  });
  try {
    let output: Json;
    if (loop.state.final) {
      // Resumed while a human reviews the final output: not asked again, not recomputed.
      output = loop.state.final.output;
    } else {
      const reply = await loop.run();
      output = await finalAnswer(ctx, group, plan, agent, maxTokens, reply.messages, reply);
    }
    const threshold = step.confidenceThreshold ?? null;
    const reflectPrompt = agent.reflect ?? null;
    return await applyContracts(output, {
      threshold,
      reflect:
        reflectPrompt === null || loop.state.final
          ? null
          : async (draft) => {
              // One reflect call: the reflect prompt, the original request and the draft; no tools.
              ctx.stream?.reset();
              const conversation: ChatMessage[] = [
                { role: "user", content: plan.user },
                { role: "assistant", content: JSON.stringify(draft) },
                {
                  role: "user",
                  content: `${stringify(render(reflectPrompt, { params, env: {}, step: {} }))}\n\nReply with your complete output as JSON again; it replaces your draft.`,
                },
              ];
              const reflected = await completeInGroup(
                gateway,
                group,
                {
                  system: plan.system,
                  messages: conversation,
                  maxTokens,
                  json: plan.json,
                  jsonSchema: plan.schema,
                },
                ctx,
                loop.state.model,
              );
              return finalAnswer(ctx, group, plan, agent, maxTokens, conversation, reflected);
            },
      askHuman: async (reviewed) => {
        const host = ctx.approvals;
        if (!host) throw new StepError("internal_error", "this run cannot ask for approvals");
        // Saved first: after an eviction the same output is under review, not a new reply.
        loop.state.final = { output };
        loop.save();
        return host.request(
          {
            key: "needs_human",
            kind: "needs_human",
            server: null,
            tool: null,
            arguments: reviewed,
            timeoutS: null,
            notify: null,
          },
          ctx.signal,
        );
      },
      annotate: (a) => ctx.annotate?.(a),
    });
  } finally {
    await loop.close();
  }
};
