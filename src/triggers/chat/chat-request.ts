/**
 * A Chat Completions request read as the workflow's params (docs/protocols.md, "OpenAI-compatible
 * endpoint"): `model` names the workflow; `messages` are kept with every `content` as text (an
 * array of parts joined to its text parts' text with "\n"); `user` and `metadata` come along; the
 * `params` templates render over exactly these. Every other field of the request (`temperature`,
 * `tools`, …) is ignored, never an error: a client that always sends them still works.
 */
import type { CompiledChat, Json, JsonObject } from "../../bundle.ts";
import { isObject } from "../../common/guards.ts";
import { HttpProblem } from "../../common/problem.ts";
import { renderOver } from "../../engine/substitute.ts";
import { RunRefusal } from "../../run/refusal.ts";

export interface ChatRequest {
  model: string;
  /** What the `params` templates read. */
  scope: { messages: JsonObject[]; user: Json; metadata: Json };
  stream: boolean;
  /** `stream_options.include_usage`: a last chunk with the usage before `[DONE]`. */
  includeUsage: boolean;
}

function invalid(message: string, param: string): HttpProblem {
  return new HttpProblem("invalid_request", message, { errors: [{ path: param, message }] });
}

/** The request's parts, or 400 `invalid_request` naming the field that is wrong. */
export function readChatRequest(body: JsonObject): ChatRequest {
  if (typeof body.model !== "string" || body.model === "")
    throw invalid("`model` must name a workflow", "model");
  if (!Array.isArray(body.messages)) throw invalid("`messages` must be an array of messages", "messages");
  const messages = body.messages.map((m, i) => {
    if (!isObject(m) || typeof m.role !== "string")
      throw invalid(`messages[${i}] must be an object with a \`role\``, `messages[${i}]`);
    return { ...m, content: contentText(m.content as Json, i) } as JsonObject;
  });
  const options = isObject(body.stream_options) ? body.stream_options : {};
  return {
    model: body.model,
    scope: { messages, user: body.user ?? null, metadata: body.metadata ?? null },
    stream: body.stream === true,
    includeUsage: options.include_usage === true,
  };
}

/** A message's content as text: a string as it is; parts joined (their text parts' text, "\n" between). */
function contentText(content: Json, i: number): Json {
  if (content === null || content === undefined || typeof content === "string") return content ?? null;
  if (!Array.isArray(content))
    throw invalid(`messages[${i}].content must be a string or an array of parts`, `messages[${i}].content`);
  return content
    .filter((p): p is JsonObject => isObject(p) && p.type === "text" && typeof p.text === "string")
    .map((p) => p.text as string)
    .join("\n");
}

/** The run's params: `invoke.chat.params` rendered over the request (default `{messages}`). */
export function chatParams(chat: CompiledChat, scope: ChatRequest["scope"]): JsonObject {
  if (chat.params === null) return { messages: scope.messages };
  let value: Json;
  try {
    value = renderOver(chat.params, scope as unknown as JsonObject);
  } catch (e) {
    // An expression that cannot read this request (a function given the wrong type): the caller's to fix.
    const why = e instanceof Error ? e.message : "it could not be evaluated";
    throw new RunRefusal(
      "invalid_params",
      `invoke.chat.params could not be rendered over this request: ${why}`,
      [{ path: "/messages", message: why }],
    );
  }
  return isObject(value) ? (value as JsonObject) : {};
}
