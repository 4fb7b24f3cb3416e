/**
 * A `SendMessage`'s message read (docs/a2a.md, "Messages"): its parts (`{text}`, `{data}`, `{url}`,
 * `{raw}`, no `kind`), the task it answers (`taskId`) or the context it opens a task in, and the
 * params it makes: `invoke.a2a.params` rendered over `{text, data, message, metadata}` (default:
 * the data part when it is an object, else `{text}`). Whatever is wrong is named field by field
 * (-32602 with a `google.rpc.BadRequest`).
 */
import type { CompiledA2a, Json, JsonObject } from "../../bundle.ts";
import { isObject } from "../../common/guards.ts";
import { renderOver } from "../../engine/substitute.ts";
import { badRequest } from "./a2a-errors.ts";

const CONTEXT_ID = /^[A-Za-z0-9._:-]{1,64}$/;

export interface ReadMessage {
  message: JsonObject;
  messageId: string;
  /** The task this message answers (input mid-task), or null for a new task. */
  taskId: string | null;
  /** The context it was sent in, or null (a new one). */
  contextId: string | null;
  /** Its text parts' text, joined with "\n". */
  text: string;
  /** Its first data part's value, or null. */
  data: Json | null;
  metadata: Json;
  returnImmediately: boolean;
  historyLength: number | null;
  /** `configuration.taskPushNotificationConfig`, as sent (checked where configs are kept). */
  push: JsonObject | null;
}

export function readMessage(params: JsonObject): ReadMessage {
  const violations: Array<{ field: string; description: string }> = [];
  const bad = (field: string, description: string) => violations.push({ field, description });
  const m = params.message;
  if (!isObject(m)) {
    throw badRequest("the request has no message", [
      { field: "message", description: "a Message object is required" },
    ]);
  }
  if (typeof m.messageId !== "string" || m.messageId === "" || m.messageId.length > 255)
    bad("message.messageId", "a string of 1 to 255 characters is required");
  if (m.role !== "ROLE_USER") bad("message.role", 'must be "ROLE_USER"');
  const parts = Array.isArray(m.parts) ? m.parts : null;
  if (!parts || parts.length === 0) bad("message.parts", "at least one part is required");
  (parts ?? []).forEach((p, i) => {
    const kinds = isObject(p) ? ["text", "data", "url", "raw"].filter((k) => Object.hasOwn(p, k)) : [];
    if (kinds.length !== 1) bad(`message.parts[${i}]`, "a part has exactly one of text, data, url, raw");
    else if (kinds[0] === "text" && typeof (p as JsonObject).text !== "string")
      bad(`message.parts[${i}].text`, "must be a string");
  });
  if (m.contextId !== undefined && (typeof m.contextId !== "string" || !CONTEXT_ID.test(m.contextId)))
    bad("message.contextId", "1 to 64 of A-Z, a-z, 0-9, '.', '_', ':', '-'");
  if (m.taskId !== undefined && typeof m.taskId !== "string") bad("message.taskId", "must be a string");
  const config = isObject(params.configuration) ? params.configuration : {};
  const historyLength = config.historyLength;
  if (historyLength !== undefined && !(Number.isInteger(historyLength) && (historyLength as number) >= 0))
    bad("configuration.historyLength", "a non-negative integer");
  if (violations.length > 0) throw badRequest("the message is not one this agent can read", violations);
  const list = (parts ?? []) as JsonObject[];
  const dataPart = list.find((p) => Object.hasOwn(p, "data"));
  return {
    message: m,
    messageId: m.messageId as string,
    taskId: typeof m.taskId === "string" && m.taskId !== "" ? m.taskId : null,
    contextId: typeof m.contextId === "string" ? m.contextId : null,
    text: list
      .filter((p) => typeof p.text === "string")
      .map((p) => p.text as string)
      .join("\n"),
    data: dataPart ? (dataPart.data ?? null) : null,
    metadata: (m.metadata ?? params.metadata ?? null) as Json,
    returnImmediately: config.returnImmediately === true,
    historyLength: typeof historyLength === "number" ? historyLength : null,
    push: isObject(config.taskPushNotificationConfig) ? config.taskPushNotificationConfig : null,
  };
}

/** The run's params from the message. */
export function a2aParams(a2a: CompiledA2a, m: ReadMessage): JsonObject {
  if (a2a.params === null) return isObject(m.data) ? (m.data as JsonObject) : { text: m.text };
  let value: Json;
  try {
    value = renderOver(a2a.params, {
      text: m.text,
      data: m.data ?? {},
      message: m.message,
      metadata: m.metadata,
    });
  } catch (e) {
    const why = e instanceof Error ? e.message : "it could not be evaluated";
    throw badRequest("invoke.a2a.params could not be rendered over this message", [
      { field: "message", description: why },
    ]);
  }
  return isObject(value) ? (value as JsonObject) : {};
}
