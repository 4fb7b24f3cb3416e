/**
 * Providers of `type: workers-ai`: the Worker's `AI` binding (`env.AI.run`). No HTTP and no
 * key; the binding must be configured in wrangler.toml, which is off by default because Workers
 * AI always runs remotely (also under `wrangler dev`).
 *
 * Tools (docs/agents-and-tools.md) are offered in the OpenAI-compatible form that Workers AI's function-calling
 * models accept (`tools: [{type: "function", function}]`); their reply's `tool_calls` (either
 * `{name, arguments}` or the OpenAI shape) become tool calls. Models without function calling
 * ignore `tools` and answer in text, which the tool loop takes as the final answer.
 */
import { systemClock } from "../engine/clock.ts";
import { retryWork } from "../engine/retry.ts";
import { openAiMessages, openAiTools, parseOpenAiToolCalls } from "./openai.ts";
import {
  type Completion,
  eventJson,
  PROVIDER_ATTEMPT_TIMEOUT_MS,
  PROVIDER_ATTEMPTS,
  type PrepareCall,
  ProviderError,
  type ProviderIo,
  readStream,
  type StreamReader,
  tokenCount,
  utf8Length,
} from "./provider.ts";

export const NO_AI_BINDING = 'no AI binding; add [ai] binding = "AI" to wrangler.toml';

export function parseAiResult(result: unknown): Completion | null {
  if (typeof result !== "object" || result === null) return null;
  const { response, usage, tool_calls } = result as {
    response?: unknown;
    usage?: Record<string, unknown>;
    tool_calls?: unknown;
  };
  const toolCalls = parseOpenAiToolCalls(tool_calls);
  // In JSON mode some models hand back the parsed object instead of its text.
  let text: string;
  if (typeof response === "string") text = response;
  else if (response !== undefined && response !== null) text = JSON.stringify(response);
  else if (toolCalls.length > 0) text = "";
  else return null;
  const input = tokenCount(usage?.prompt_tokens);
  const output = tokenCount(usage?.completion_tokens);
  return {
    text,
    usage: input === null || output === null ? null : { input_tokens: input, output_tokens: output },
    toolCalls,
  };
}

/** ai.run takes no signal: race it against the run signal, the deadline and the attempt timeout. */
function bounded<T>(work: Promise<T>, io: ProviderIo): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const clock = io.clock ?? systemClock;
    const ms = Math.max(0, Math.min(PROVIDER_ATTEMPT_TIMEOUT_MS, io.deadline - clock.now()));
    const cancelTimer = clock.setTimer(
      () => done(() => reject(new Error(`no response within ${ms} ms`))),
      ms,
    );
    const onAbort = () => done(() => reject(io.signal.reason));
    const done = (fn: () => void) => {
      cancelTimer();
      io.signal.removeEventListener("abort", onAbort);
      fn();
    };
    if (io.signal.aborted) return onAbort();
    io.signal.addEventListener("abort", onAbort, { once: true });
    work.then(
      (v) => done(() => resolve(v)),
      (e) => done(() => reject(e)),
    );
  });
}

export const prepareWorkersAi: PrepareCall = (model, req, provider) => {
  const messages = openAiMessages(req.system, req.messages);
  const input: Record<string, unknown> = { messages, max_tokens: req.maxTokens };
  if (req.temperature !== undefined) input.temperature = req.temperature;
  const tools = openAiTools(req);
  if (tools) input.tools = tools;
  if (req.json && req.jsonSchema !== null) {
    input.response_format = { type: "json_schema", json_schema: req.jsonSchema };
  }
  return {
    requestBytes: utf8Length(JSON.stringify(input)),
    async send(io) {
      if (!io.ai) throw new ProviderError(`provider ${provider.name}: ${NO_AI_BINDING}`);
      const ai = io.ai;
      if (io.stream) {
        // Streaming: the binding answers a ReadableStream of `data: {"response": …}` events ending `[DONE]`.
        const sink = { ...io, stream: io.stream };
        let body: unknown;
        try {
          io.onAttempt();
          body = await bounded(ai.run(model, { ...input, stream: true }), io);
        } catch (e) {
          if (io.signal.aborted) throw e;
          throw new ProviderError(`${provider.name}/${model}: ${e instanceof Error ? e.message : String(e)}`);
        }
        if (!(body instanceof ReadableStream))
          throw new ProviderError(`${provider.name}/${model}: the reply is not a stream`);
        return readStream(body as ReadableStream<Uint8Array>, sink, `${provider.name}/${model}`, readAiEvent);
      }
      let result: unknown;
      try {
        // Retried like the HTTP providers' calls: PROVIDER_ATTEMPTS attempts, with back-off.
        result = await retryWork(
          {
            attempts: PROVIDER_ATTEMPTS,
            baseDelayMs: 250,
            maxBackoffMs: 8_000,
            deadline: io.deadline,
            signal: io.signal,
            clock: io.clock,
            retryable: () => true,
          },
          () => {
            io.onAttempt();
            return bounded(ai.run(model, input), io);
          },
        );
      } catch (e) {
        if (io.signal.aborted) throw e;
        // Binding errors carry Cloudflare's own text (no key is involved): safe to show.
        throw new ProviderError(`${provider.name}/${model}: ${e instanceof Error ? e.message : String(e)}`);
      }
      const parsed = parseAiResult(result);
      if (!parsed) throw new ProviderError(`${provider.name}/${model}: the reply has no response`);
      return parsed;
    },
  };
};

/** One event of a Workers AI stream: `{"response": "<text>"}`, usage in a last one, then `[DONE]`. */
export const readAiEvent: StreamReader = (ev, reply) => {
  if (ev.data.trim() === "[DONE]") {
    reply.done = true;
    return "";
  }
  const data = eventJson(ev);
  if (!data) return "";
  const usage = data.usage as Record<string, unknown> | undefined;
  if (usage) {
    reply.inputTokens = tokenCount(usage.prompt_tokens);
    reply.outputTokens = tokenCount(usage.completion_tokens);
  }
  return typeof data.response === "string" ? data.response : "";
};
