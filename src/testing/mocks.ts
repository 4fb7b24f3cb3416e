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
 *   A mock answer may be a turn that calls tools (`tool_calls`), sent in the provider's native
 *   form; the tool loop then runs for real against the mock tool servers of tool-mocks.ts.
 *
 * Mocks are keyed by slash path (mock-keys.ts). The most specific key wins, and a fan-out item's
 * index may be left out: `analyze` answers every item of `analyze`, `analyze/2` only the third. A
 * step without a mock fails with `unmocked_step`, before anything is sent: no request ever leaves.
 */
import type {
  AgentStep,
  CompiledAgent,
  Json,
  JsonObject,
  MockedStepKind,
  WaitStep,
  WebhookStep,
} from "../bundle.ts";
import type { MockAnswer, MockSpec } from "../compiler/test-files/suite.ts";
import { type Clock, sleep } from "../engine/clock.ts";
import type { Masker } from "../engine/mask.ts";
import { shownUrl } from "../engine/net.ts";
import type { OutboundLimiter } from "../engine/outbound.ts";
import type { Executors } from "../engine/run-host.ts";
import { render } from "../engine/substitute.ts";
import { type StepContext, StepError } from "../engine/types.ts";
import { mockKeyFor } from "./mock-keys.ts";
import { type MockAnswers, mockToolHost } from "./tool-mocks.ts";

export { keyMatches, mockKeyFor } from "./mock-keys.ts";

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
  /** ALLOW_PRIVATE_WEBHOOKS=true in the case's env: tool servers may be private hosts. */
  allowPrivate: boolean;
  /**
   * An eval with `--live` (docs/workflow-tests.md, "Evals"): an agent step or judge without a mock
   * calls its provider through this fetch; webhooks and tools stay mocked.
   */
  live?: { fetch: StepContext["fetch"] };
}

/** Wraps the real executors: webhook and agent steps talk to their mocks, the rest is untouched. */
export function mockedExecutors(real: Executors, setup: MockSetup, log: MockLog): Executors {
  const calls = new Map<string, number>();
  const unmocked = (message: string) => {
    log.unmocked.push(message);
    return new StepError("unmocked_step", message);
  };
  const stepKeys = Object.keys(setup.mocks).filter((k) => setup.mocks[k]?.kind !== "tool");
  const toolKeys = Object.keys(setup.mocks).filter((k) => setup.mocks[k]?.kind === "tool");
  const toolMocks = toolKeys.map((key) => ({ key, tool: setup.mocks[key]?.tool as string }));
  const specFor = (path: string, kind: MockedStepKind): MockSpec => {
    const key = mockKeyFor(stepKeys, path);
    const spec = key === null ? undefined : setup.mocks[key];
    if (!spec)
      throw unmocked(`${kind} step \`${path}\` has no mock: add \`${path}:\` under the case's \`mocks\``);
    return spec;
  };
  /** The answer to the next request of the step (or tool call) at `path`. */
  const nextAnswer = (path: string, spec: MockSpec, what: string): MockAnswer => {
    const n = calls.get(path) ?? 0;
    calls.set(path, n + 1);
    const answer = spec.repeat ? spec.answers[0] : spec.answers[n];
    if (answer) return answer;
    const kind = spec.kind === "tool" ? "tool" : "step";
    throw unmocked(
      `${kind} \`${path}\` made ${what} ${n + 1}, but its mock lists ${spec.answers.length} answer${spec.answers.length === 1 ? "" : "s"}`,
    );
  };
  const record = (path: string, request: Json) => {
    const list = log.requests.get(path) ?? [];
    list.push(setup.masker.maskJson(request));
    log.requests.set(path, list);
  };
  const answers: MockAnswers = {
    keyFor: (path) => mockKeyFor(toolKeys, path),
    spec: (key) => setup.mocks[key] as MockSpec,
    next: nextAnswer,
    record,
    unmocked,
  };

  return {
    ...real,
    // A mocked wait answers its `output` (after its `delay_s`); an unmocked one really waits, on
    // the virtual clock: a sleep ends, a signal times out.
    wait: async (step: WaitStep, ctx: StepContext) => {
      const key = mockKeyFor(stepKeys, ctx.path);
      const spec = key === null ? undefined : setup.mocks[key];
      if (!spec) return real.wait(step, ctx);
      const answer = nextAnswer(ctx.path, spec, "wait");
      await answerDelay(setup.clock, answer, ctx.signal);
      return (answer as { output?: Json }).output ?? null;
    },
    webhook: (step: WebhookStep, ctx: StepContext) => {
      // A compensation (`<path>:compensate`) is mocked as `<path>/compensate`.
      const path = ctx.path.replace(/:compensate$/, "/compensate");
      const spec = specFor(path, "webhook");
      const fetch: StepContext["fetch"] = (input, init) =>
        setup.limiter.run(async () => {
          const request = new Request(input, init);
          record(path, await describeRequest(request));
          const answer = nextAnswer(path, spec, "attempt");
          await answerDelay(setup.clock, answer, request.signal);
          return webhookResponse(answer);
        }, init?.signal ?? undefined);
      return real.webhook(step, { ...ctx, fetch });
    },
    agent: (step: AgentStep, ctx: StepContext) => {
      if (setup.live && mockKeyFor(stepKeys, ctx.path) === null) {
        const agent = ctx.bundle.agents[step.agent];
        const tools = mockToolHost({
          path: ctx.path,
          refs: agent?.builtin === null ? (agent.servers ?? []) : [],
          scripted: [],
          toolMocks,
          allowPrivate: setup.allowPrivate,
          clock: setup.clock,
          limiter: setup.limiter,
          answers,
        });
        return real.agent(step, { ...ctx, fetch: setup.live.fetch, tools });
      }
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
            throw unmocked(
              `agent step \`${ctx.path}\` sent a request to ${shownUrl(url, false)}, which is not mocked`,
            );
          }
          const body = (await request.json()) as JsonObject;
          record(ctx.path, modelCall(params, body));
          const answer = nextAnswer(ctx.path, spec, "model call");
          const turn = calls.get(ctx.path) ?? 0;
          await answerDelay(setup.clock, answer, request.signal);
          return modelResponse(format, answer, agent, turn);
        }, init?.signal ?? undefined);
      const ai: StepContext["ai"] = {
        run: async (model, input) => {
          const body = { ...(input as JsonObject), model } as JsonObject;
          record(ctx.path, modelCall(params, body));
          const answer = nextAnswer(ctx.path, spec, "model call");
          const turn = calls.get(ctx.path) ?? 0;
          // The binding takes no signal; the gateway races it against the run's.
          await answerDelay(setup.clock, answer, new AbortController().signal);
          if (answer.error !== undefined) throw new Error(answer.error);
          if (answer.status !== undefined) throw new Error(`mock: HTTP ${answer.status}`);
          const { prompt_tokens, completion_tokens } = usageOf(answer);
          const usage = { prompt_tokens, completion_tokens };
          if (answer.tool_calls) {
            // The form Workers AI function-calling models answer in.
            const tool_calls = scriptedCalls(answer, turn).map((c) => ({
              name: c.name,
              arguments: c.arguments,
            }));
            return { response: null, tool_calls, usage };
          }
          return { response: replyText(answer, agent), usage };
        },
      };
      const tools = mockToolHost({
        path: ctx.path,
        refs: agent?.builtin === null ? (agent.servers ?? []) : [],
        scripted: spec.answers.flatMap((a) => (a.tool_calls ?? []).map((c) => c.name)),
        toolMocks,
        allowPrivate: setup.allowPrivate,
        clock: setup.clock,
        limiter: setup.limiter,
        answers,
      });
      return real.agent(step, { ...ctx, fetch, ai, tools });
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
  // The names of the tools offered on this call (OpenAI and Workers AI `function.name`, Anthropic `name`).
  const tools = (Array.isArray(body.tools) ? (body.tools as JsonObject[]) : []).map((t) => {
    const fn = t.function as JsonObject | undefined;
    return (fn?.name ?? t.name ?? null) as Json;
  });
  return {
    params,
    model: body.model ?? null,
    system,
    messages: raw.filter((m) => m.role !== "system"),
    tools,
    // The output token limit, whichever field the provider entry sends it in.
    max_tokens: body.max_tokens ?? body.max_completion_tokens ?? null,
  };
}

/** A scripted turn's tool calls, with ids fixed by the model call (`call_<turn>_<index>`). */
function scriptedCalls(
  answer: MockAnswer,
  turn: number,
): Array<{ id: string; name: string; arguments: Json }> {
  return (answer.tool_calls ?? []).map((c, i) => ({
    id: `call_${turn}_${i}`,
    name: c.name,
    arguments: c.arguments ?? {},
  }));
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
  turn: number,
): Response {
  const json = (value: unknown, status = 200) =>
    new Response(JSON.stringify(value), { status, headers: { "content-type": "application/json" } });
  if (answer.status !== undefined) {
    return json({ error: { type: "mock_error", code: "mock_error" } }, answer.status);
  }
  const { prompt_tokens, completion_tokens } = usageOf(answer);
  if (answer.tool_calls) {
    const calls = scriptedCalls(answer, turn);
    if (format === "anthropic") {
      return json({
        type: "message",
        role: "assistant",
        content: calls.map((c) => ({ type: "tool_use", id: c.id, name: c.name, input: c.arguments })),
        stop_reason: "tool_use",
        usage: { input_tokens: prompt_tokens, output_tokens: completion_tokens },
      });
    }
    return json({
      object: "chat.completion",
      choices: [
        {
          index: 0,
          message: {
            role: "assistant",
            content: null,
            tool_calls: calls.map((c) => ({
              id: c.id,
              type: "function",
              function: {
                name: c.name,
                // A string is sent as is: arguments that are not JSON are a model's mistake to test.
                arguments: typeof c.arguments === "string" ? c.arguments : JSON.stringify(c.arguments),
              },
            })),
          },
          finish_reason: "tool_calls",
        },
      ],
      usage: { prompt_tokens, completion_tokens },
    });
  }
  const text = replyText(answer, agent);
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
