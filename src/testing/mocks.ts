/**
 * Mocks of a workflow test case: the steps that touch the world keep their real executors, and
 * only what leaves the Worker is replaced.
 *
 * - A webhook step gets a `fetch` that records the request the executor built (URL, headers,
 *   body, signature: exactly what would have been sent) and answers from the mock, one answer per
 *   attempt. Retries, `Retry-After`, attempt timeouts and `webhook_failed` are the executor's own.
 * - An agent step gets a model provider that answers from the mock in the provider's own format
 *   (OpenAI chat completions, Anthropic messages, the Workers AI binding). The agent executor and
 *   the gateway run for real: params are validated, the prompt is built, the worst case is
 *   reserved on the run's budget and settled with the mock's priced `usage`, the reply is parsed
 *   and validated against the output schema (with its repair call).
 *
 * Mocks are keyed by slash path. The most specific key wins, and a fan-out item's index may be
 * left out: `analyze` answers every item of `analyze`, `analyze/2` only the third. A step without
 * a mock fails with `unmocked_step`, before anything is sent: no request ever leaves.
 */
import type { AgentStep, CompiledAgent, Json, JsonObject, WebhookStep } from "../bundle.ts";
import type { MockAnswer, MockSpec } from "../compiler/test-files.ts";
import { type Clock, sleep } from "../engine/clock.ts";
import type { Masker } from "../engine/mask.ts";
import type { Executors } from "../engine/scheduler.ts";
import { render } from "../engine/substitute.ts";
import { type StepContext, StepError } from "../engine/types.ts";
import type { OutboundLimiter } from "../run/outbound.ts";

/** What one case's mocks saw: requests by step path (masked) and the steps that had no mock. */
export interface MockLog {
  requests: Map<string, Json[]>;
  unmocked: string[];
}

export interface MockSetup {
  mocks: Record<string, MockSpec>;
  masker: Masker;
  clock: Clock;
  /** The run's outbound limit (6 requests in flight), as in the Worker. */
  limiter: OutboundLimiter;
}

function isItemIndex(segment: string): boolean {
  return /^\d+$/.test(segment);
}

/** Whether `key` names `path`, reading item indexes of `path` as optional. */
export function keyMatches(key: string, path: string): boolean {
  const k = key.split("/");
  const p = path.split("/");
  let j = 0;
  for (const seg of p) {
    if (j < k.length && k[j] === seg) j++;
    else if (!isItemIndex(seg)) return false;
  }
  return j === k.length;
}

/** The most specific mock key for a step path (most segments), or null. */
export function mockKeyFor(keys: Iterable<string>, path: string): string | null {
  let best: string | null = null;
  let bestLength = -1;
  for (const key of keys) {
    if (!keyMatches(key, path)) continue;
    const length = key.split("/").length;
    if (length > bestLength || (length === bestLength && best !== null && key > best)) {
      best = key;
      bestLength = length;
    }
  }
  return best;
}

/** Wraps the real executors: webhook and agent steps talk to their mocks, the rest is untouched. */
export function mockedExecutors(real: Executors, setup: MockSetup, log: MockLog): Executors {
  const calls = new Map<string, number>();
  const specFor = (path: string, kind: "webhook" | "agent"): MockSpec => {
    const key = mockKeyFor(Object.keys(setup.mocks), path);
    const spec = key === null ? undefined : setup.mocks[key];
    if (!spec) {
      const message = `${kind} step \`${path}\` has no mock: add \`${path}:\` under the case's \`mocks\``;
      log.unmocked.push(message);
      throw new StepError("unmocked_step", message);
    }
    return spec;
  };
  /** The answer to the next request of the step at `path`. */
  const nextAnswer = (path: string, spec: MockSpec, what: string): MockAnswer => {
    const n = calls.get(path) ?? 0;
    calls.set(path, n + 1);
    const answer = spec.repeat ? spec.answers[0] : spec.answers[n];
    if (answer) return answer;
    const message = `step \`${path}\` made ${what} ${n + 1}, but its mock lists ${spec.answers.length} answer${spec.answers.length === 1 ? "" : "s"}`;
    log.unmocked.push(message);
    throw new StepError("unmocked_step", message);
  };
  const record = (path: string, request: Json) => {
    const list = log.requests.get(path) ?? [];
    list.push(setup.masker.maskJson(request));
    log.requests.set(path, list);
  };

  return {
    ...real,
    webhook: (step: WebhookStep, ctx: StepContext) => {
      const spec = specFor(ctx.path, "webhook");
      const fetch: StepContext["fetch"] = (input, init) =>
        setup.limiter.run(async () => {
          const request = new Request(input, init);
          record(ctx.path, await describeRequest(request));
          const answer = nextAnswer(ctx.path, spec, "attempt");
          await answerDelay(setup.clock, answer, request.signal);
          return webhookResponse(answer);
        }, init?.signal ?? undefined);
      return real.webhook(step, { ...ctx, fetch });
    },
    agent: (step: AgentStep, ctx: StepContext) => {
      const spec = specFor(ctx.path, "agent");
      const agent = ctx.bundle.agents[step.agent];
      let params: Json = null;
      try {
        params = render(step.params, ctx.scope);
      } catch {
        // The executor reports the same expression error itself.
      }
      const fetch: StepContext["fetch"] = (input, init) =>
        setup.limiter.run(async () => {
          const request = new Request(input, init);
          const format = providerFormat(request.url);
          if (format === null) {
            const url = new URL(request.url);
            const message = `agent step \`${ctx.path}\` sent a request to ${url.protocol}//${url.host}${url.pathname}, which is not mocked`;
            log.unmocked.push(message);
            throw new StepError("unmocked_step", message);
          }
          const body = (await request.json()) as JsonObject;
          record(ctx.path, modelCall(params, body));
          const answer = nextAnswer(ctx.path, spec, "model call");
          await answerDelay(setup.clock, answer, request.signal);
          return modelResponse(format, answer, agent);
        }, init?.signal ?? undefined);
      const ai: StepContext["ai"] = {
        run: async (model, input) => {
          const body = { ...(input as JsonObject), model } as JsonObject;
          record(ctx.path, modelCall(params, body));
          const answer = nextAnswer(ctx.path, spec, "model call");
          // The binding takes no signal; the gateway races it against the run's.
          await answerDelay(setup.clock, answer, new AbortController().signal);
          if (answer.error !== undefined) throw new Error(answer.error);
          if (answer.status !== undefined) throw new Error(`mock: HTTP ${answer.status}`);
          const { prompt_tokens, completion_tokens } = usageOf(answer);
          return { response: replyText(answer, agent), usage: { prompt_tokens, completion_tokens } };
        },
      };
      return real.agent(step, { ...ctx, fetch, ai });
    },
  };
}

async function describeRequest(request: Request): Promise<Json> {
  const headers: JsonObject = {};
  request.headers.forEach((value, name) => {
    headers[name] = value;
  });
  const text = request.body === null ? null : await request.text();
  let body: Json = text;
  if (text !== null && (request.headers.get("content-type") ?? "").includes("json")) {
    try {
      body = JSON.parse(text) as Json;
    } catch {
      // Recorded as text.
    }
  }
  return { method: request.method, url: request.url, headers, body };
}

/** Waits the answer's `delay_s` on the virtual clock; an abort (attempt timeout, deadline) ends it. */
async function answerDelay(clock: Clock, answer: MockAnswer, signal: AbortSignal): Promise<void> {
  if (answer.delay_s !== undefined && answer.delay_s > 0) await sleep(clock, answer.delay_s * 1000, signal);
  if (signal.aborted) throw signal.reason;
  if (answer.error !== undefined) throw new TypeError(`fetch failed: ${answer.error}`);
}

const NULL_BODY_STATUSES = new Set([204, 205, 304]);

function webhookResponse(answer: MockAnswer): Response {
  const status = answer.status ?? 200;
  const headers = new Headers(answer.headers ?? {});
  let body: string | null = null;
  if (answer.body !== undefined && !NULL_BODY_STATUSES.has(status)) {
    if (typeof answer.body === "string") {
      body = answer.body;
      if (!headers.has("content-type")) headers.set("content-type", "text/plain; charset=utf-8");
    } else {
      body = JSON.stringify(answer.body);
      if (!headers.has("content-type")) headers.set("content-type", "application/json");
    }
  }
  return new Response(body, { status, headers });
}

type ProviderFormat = "openai" | "anthropic";

function providerFormat(url: string): ProviderFormat | null {
  const path = new URL(url).pathname;
  if (path.endsWith("/chat/completions")) return "openai";
  if (path.endsWith("/v1/messages")) return "anthropic";
  return null;
}

/** One model call as a test sees it: the step's params and what was asked of the model. */
function modelCall(params: Json, body: JsonObject): Json {
  const raw = Array.isArray(body.messages) ? (body.messages as JsonObject[]) : [];
  const system =
    typeof body.system === "string"
      ? body.system
      : ((raw.find((m) => m.role === "system")?.content as Json | undefined) ?? null);
  return {
    params,
    model: body.model ?? null,
    system,
    messages: raw.filter((m) => m.role !== "system"),
    max_tokens: body.max_tokens ?? null,
  };
}

function usageOf(answer: MockAnswer): { prompt_tokens: number; completion_tokens: number } {
  return { prompt_tokens: answer.usage?.tokens_in ?? 0, completion_tokens: answer.usage?.tokens_out ?? 0 };
}

/** The reply text that makes the agent executor produce `output` (core/chat outputs `{text}`). */
function replyText(answer: MockAnswer, agent: CompiledAgent | undefined): string {
  if (answer.reply !== undefined) return answer.reply;
  const output = answer.output ?? null;
  if (agent?.builtin === "chat") {
    const text = (output as { text?: unknown } | null)?.text;
    return typeof text === "string" ? text : JSON.stringify(output);
  }
  return JSON.stringify(output);
}

function modelResponse(
  format: ProviderFormat,
  answer: MockAnswer,
  agent: CompiledAgent | undefined,
): Response {
  const json = (value: unknown, status = 200) =>
    new Response(JSON.stringify(value), { status, headers: { "content-type": "application/json" } });
  if (answer.status !== undefined) {
    return json({ error: { type: "mock_error", code: "mock_error" } }, answer.status);
  }
  const text = replyText(answer, agent);
  const { prompt_tokens, completion_tokens } = usageOf(answer);
  if (format === "anthropic") {
    return json({
      type: "message",
      role: "assistant",
      content: [{ type: "text", text }],
      usage: { input_tokens: prompt_tokens, output_tokens: completion_tokens },
    });
  }
  return json({
    object: "chat.completion",
    choices: [{ index: 0, message: { role: "assistant", content: text }, finish_reason: "stop" }],
    usage: { prompt_tokens, completion_tokens },
  });
}
