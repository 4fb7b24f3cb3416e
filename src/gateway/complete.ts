/**
 * One completion from a model group: the gateway's single entry point for agent steps.
 *
 * For each model in the strategy's order: prepare the provider request, reserve its worst
 * case on the run's budget, send it, settle the reservation with the actual cost, record the
 * metrics. A provider failure moves on to the next model; when every model failed the step
 * fails with `agent_failed` and a message that names providers, models and HTTP statuses but
 * never quotes a response body. A budget refusal is final: no call is made.
 */
import type { CompiledGateway, CompiledGroup, ProviderType } from "../bundle.ts";
import { addUsd } from "../engine/budget.ts";
import { systemClock } from "../engine/clock.ts";
import { httpOutcome, withTraceparent } from "../engine/trace.ts";
import { type StepContext, StepError } from "../engine/types.ts";
import { prepareAnthropic } from "./anthropic.ts";
import { prepareOpenAi } from "./openai.ts";
import { costUsd, priceOf, worstCaseUsd } from "./pricing.ts";
import type { TextSink } from "./provider.ts";
import {
  type ModelRequest,
  type PrepareCall,
  ProviderError,
  type ToolCall,
  type Usage,
  utf8Length,
} from "./provider.ts";
import { type GroupModel, modelOrder } from "./select.ts";
import { prepareWorkersAi } from "./workers-ai.ts";

/**
 * The model providers by `type`, one adapter module each, typed against PROVIDER_TYPES in the
 * bundle (where the build's facts about each type live): a type without an adapter is a type
 * error. A new provider is its module beside openai.ts plus its line here.
 */
export const PROVIDERS: { readonly [T in ProviderType]: PrepareCall } = {
  openai: prepareOpenAi,
  anthropic: prepareAnthropic,
  "workers-ai": prepareWorkersAi,
};

export interface GroupCompletion {
  text: string;
  /** Tool calls of the reply ([] for a final answer). */
  toolCalls: ToolCall[];
  model: GroupModel;
  /** As reported, or the worst case when the provider reported none. */
  usage: Usage;
  costUsd: number;
}

export type GatewayContext = Pick<
  StepContext,
  "env" | "fetch" | "signal" | "deadline" | "ai" | "budget" | "metrics" | "clock" | "trace"
> & {
  /** A streaming step's answer text goes here as it arrives; a turn that offers tools is not streamed. */
  stream?: TextSink;
};

function failureText(e: unknown): string {
  if (e instanceof ProviderError) return e.message;
  return e instanceof Error ? e.message : String(e);
}

/**
 * `preferred` goes first when it is in the group (a repair call continues the conversation
 * with the model that wrote the reply being repaired).
 */
export async function completeInGroup(
  gateway: CompiledGateway,
  group: CompiledGroup,
  req: ModelRequest,
  ctx: GatewayContext,
  preferred: GroupModel | null = null,
): Promise<GroupCompletion> {
  const promptBytes = utf8Length(
    JSON.stringify({ system: req.system, messages: req.messages, tools: req.tools }),
  );
  let order = modelOrder(group, promptBytes, req.maxTokens);
  if (preferred) {
    const same = (m: GroupModel) => m.provider === preferred.provider && m.model === preferred.model;
    const first = order.find(same);
    if (first) order = [first, ...order.filter((m) => !same(m))];
  }

  const failures: string[] = [];
  for (const m of order) {
    const provider = gateway.providers.find((p) => p.name === m.provider);
    if (!provider) {
      failures.push(`${m.provider}/${m.model}: no such provider`);
      continue;
    }
    let prepared: ReturnType<PrepareCall>;
    try {
      const temperature = req.temperature ?? group.defaultTemperature;
      prepared = PROVIDERS[provider.type](
        m.model,
        temperature === undefined ? req : { ...req, temperature },
        provider,
        ctx.env,
      );
    } catch (e) {
      failures.push(failureText(e));
      continue;
    }

    const worstCase = worstCaseUsd(group, prepared.requestBytes, req.maxTokens);
    const reservation = await ctx.budget.reserve(worstCase, ctx.signal);
    // One client span per model call (GenAI semantic conventions), its traceparent on the request.
    const span = ctx.trace?.client(`chat ${m.model}`, {
      "gen_ai.operation.name": "chat",
      "gen_ai.provider.name": provider.type,
      "gen_ai.request.model": m.model,
    });
    let completion: Awaited<ReturnType<typeof prepared.send>>;
    try {
      completion = await prepared.send({
        fetch: span ? (input, init) => ctx.fetch(input, withTraceparent(init, span.traceparent)) : ctx.fetch,
        signal: ctx.signal,
        deadline: ctx.deadline,
        ai: ctx.ai,
        clock: ctx.clock,
        onAttempt: () => {
          ctx.metrics.attempts += 1;
        },
        ...(ctx.stream && (req.tools ?? []).length === 0 ? { stream: ctx.stream } : {}),
      });
    } catch (e) {
      // Providers bill completions, not failed requests: the reservation is released.
      reservation.settle(0);
      span?.end(httpOutcome(null, e), "the model call failed");
      if (ctx.signal.aborted) throw ctx.signal.reason ?? e;
      if (e instanceof StepError) throw e;
      if ((ctx.clock ?? systemClock).now() >= ctx.deadline) {
        throw new StepError("timeout", `the run deadline passed during a call to ${m.provider}/${m.model}`);
      }
      failures.push(failureText(e));
      continue;
    }

    const usage = completion.usage ?? { input_tokens: prepared.requestBytes, output_tokens: req.maxTokens };
    const cost = costUsd(priceOf(group, m.model), usage);
    reservation.settle(cost);
    span?.end({
      "gen_ai.usage.input_tokens": usage.input_tokens,
      "gen_ai.usage.output_tokens": usage.output_tokens,
    });
    ctx.metrics.tokens_in += usage.input_tokens;
    ctx.metrics.tokens_out += usage.output_tokens;
    ctx.metrics.cost_usd = addUsd(ctx.metrics.cost_usd, cost);
    ctx.metrics.llm_calls += 1;
    return { text: completion.text, toolCalls: completion.toolCalls ?? [], model: m, usage, costUsd: cost };
  }
  const detail = failures.length > 0 ? failures.join("; ") : "the group has no models";
  throw new StepError("agent_failed", `model group ${group.name}: every model failed: ${detail}`);
}
