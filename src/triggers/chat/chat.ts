/**
 * The OpenAI-compatible endpoint (docs/protocols.md): `POST /v1/chat/completions` with `model` = the
 * name of a workflow that declares `invoke.chat` starts the same durable run as
 * `POST /invoke/{name}` (its credentials, `params.schema`, rate limit, flow control, budget,
 * deadline, masking) and answers with the run's reply as a `chat.completion`, or, with
 * `stream: true`, as `chat.completion.chunk`s (chat-stream.ts). `GET /v1/models` lists the
 * workflows served so, for anyone (names only, like the front page). Every error is in OpenAI's
 * shape (openai-errors.ts).
 */
import type { Bundle, CompiledWorkflow, JsonObject } from "../../bundle.ts";
import { HttpProblem } from "../../common/problem.ts";
import type { Envelope } from "../../run/envelope.ts";
import type { Deployed } from "../../run/start/reruns.ts";
import { type StartOutcome, startRun } from "../../run/start/start-run.ts";
import { requireCaller } from "../credentials.ts";
import { runEnd } from "../protocol-run.ts";
import { rateLimited } from "../rate-limit.ts";
import { parseJsonObject, readBody, utf8 } from "../request-body.ts";
import { idempotencyKeyOf, startRequest } from "../start-request.ts";
import { chatReply, runHeaders, usageOf } from "./chat-reply.ts";
import { chatParams, readChatRequest } from "./chat-request.ts";
import { chatStream } from "./chat-stream.ts";
import { openAiError, openAiErrorOf, runFailed } from "./openai-errors.ts";

/** How long a request waits for its run in one call before it asks again (the run's end, up to its deadline). */
const FIRST_WAIT_S = 60;

/** `POST /v1/chat/completions`. */
export async function chatCompletions(
  served: Deployed,
  env: Env,
  req: Request,
  carry?: (work: Promise<void>) => void,
): Promise<Response> {
  try {
    const raw = env as unknown as Record<string, unknown>;
    const chat = readChatRequest(parseJsonObject(utf8(await readBody(req))));
    const found = served.lookup(chat.model);
    const wf = found?.wf;
    if (!found || !wf?.chat) {
      return openAiError(404, "workflow_not_found", `The model \`${chat.model}\` does not exist`, {
        param: "model",
      });
    }
    await requireCaller(wf.auth, req.headers, raw);
    const params = chatParams(wf.chat, chat.scope);
    const runKey = idempotencyKeyOf(req.headers);
    const waitS = chat.stream ? 0 : FIRST_WAIT_S;
    const started = await startRequest(
      served.bundle,
      wf,
      { params, headers: req.headers, url: req.url, runKey, waitS },
      raw,
    );
    const result = await startRun(env, found.key, wf, { ...started, carry });
    const runId = refusalOf(wf, result);
    if (chat.stream) return chatStream(env, served.bundle, wf, runId, chat.includeUsage);
    const envelope = await runEnd(env, runId, "envelope" in result ? result.envelope : null);
    if (!envelope) throw new HttpProblem("run_not_found", "the run is gone");
    return completion(wf, envelope);
  } catch (e) {
    return openAiErrorOf(e);
  }
}

/** The run a start made or joined, or the refusal that made none. */
function refusalOf(wf: CompiledWorkflow, result: StartOutcome): string {
  if (result.outcome === "rate_limited") throw rateLimited(wf);
  if (result.outcome === "queue_full" || result.outcome === "skipped") {
    throw new HttpProblem(
      "queue_full",
      result.outcome === "skipped"
        ? `${wf.name} skips new runs while one of this key runs (on_full: skip); retry later`
        : `${wf.name}'s queue for this key holds 10,000 runs; retry later`,
      { headers: { "retry-after": String(result.outcome === "queue_full" ? result.retryAfterS : 1) } },
    );
  }
  if (result.outcome === "conflict") {
    throw new HttpProblem(
      "idempotency_conflict",
      "this Idempotency-Key was already used with a different body for this workflow",
    );
  }
  return result.runId;
}

/** A finished run as a `chat.completion` (200), or a 500 that is not retried. */
function completion(wf: CompiledWorkflow, envelope: Envelope): Response {
  if (envelope.status !== "complete") return runFailed(envelope.run_id, envelope.error, envelope.status);
  return Response.json(
    {
      id: `chatcmpl-${envelope.run_id}`,
      object: "chat.completion",
      created: Math.floor(Date.parse(envelope.created_at) / 1000),
      model: wf.name,
      choices: [
        {
          index: 0,
          message: { role: "assistant", content: chatReply(wf, envelope), refusal: null },
          finish_reason: "stop",
          logprobs: null,
        },
      ],
      usage: usageOf(envelope),
    },
    { headers: runHeaders(envelope.run_id) },
  );
}

/** `GET /v1/models`: every workflow served as a model, for anyone (names only). */
export function modelList(bundle: Bundle): Response {
  return Response.json({
    object: "list",
    data: Object.keys(bundle.invocable).flatMap((n) => modelOf(bundle, n) ?? []),
  });
}

/** `GET /v1/models/{name}`, or 404 in OpenAI's shape. */
export function oneModel(bundle: Bundle, name: string): Response {
  return (
    (modelOf(bundle, name) && Response.json(modelOf(bundle, name))) ??
    openAiError(404, "workflow_not_found", `The model \`${name}\` does not exist`, { param: "model" })
  );
}

function modelOf(bundle: Bundle, name: string): JsonObject | null {
  const key = Object.hasOwn(bundle.invocable, name) ? bundle.invocable[name] : undefined;
  const wf = key ? bundle.workflows[key] : undefined;
  if (!wf?.chat) return null;
  return { id: name, object: "model", created: builtAt(bundle), owned_by: "workflow-edge" };
}

/** When the deployed bundle was built, in seconds (0 when the build did not say). */
function builtAt(bundle: Bundle): number {
  const at = bundle.builtAt ? Date.parse(bundle.builtAt) : Number.NaN;
  return Number.isFinite(at) ? Math.floor(at / 1000) : 0;
}
