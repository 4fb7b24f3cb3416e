/**
 * Turns an invoke body into the params object by its content type (docs/triggers.md, "Bodies").
 * JSON (or no content type) as ever; a form (`application/x-www-form-urlencoded`, what Slack
 * slash commands, Twilio and GitHub's form deliveries send) becomes an object of strings, and a
 * form whose only field is `payload` holding a JSON object is that object. Anything else is 415:
 * a body we cannot read must not become a run with empty params. The 1 MiB cap was applied when
 * the bytes were read; the nesting cap applies to every JSON, the unwrapped payload included.
 */
import type { JsonObject } from "../../bundle.ts";
import { HttpProblem } from "../../common/problem.ts";
import { jsonObjectOrNull, parseJsonObject, utf8 } from "../request-body.ts";

const FORM = "application/x-www-form-urlencoded";

/** The media type of a Content-Type value, lower-cased, without parameters ("" when absent). */
export function mediaType(contentType: string | null): string {
  return (contentType ?? "").split(";")[0]?.trim().toLowerCase() ?? "";
}

export function isJsonMedia(media: string): boolean {
  return media === "" || media === "application/json" || /^application\/[^/\s]+\+json$/.test(media);
}

export function decodeParams(bytes: Uint8Array, contentType: string | null): JsonObject {
  const media = mediaType(contentType);
  if (isJsonMedia(media)) return parseJsonObject(utf8(bytes));
  if (media === FORM) return decodeForm(utf8(bytes));
  throw new HttpProblem(
    "unsupported_media_type",
    "send the params as application/json or application/x-www-form-urlencoded",
    { headers: { "accept-post": `application/json, ${FORM}` } },
  );
}

/** Every field of a form, values in order (repeated keys keep all their values). */
export function formFields(text: string): Map<string, string[]> {
  const fields = new Map<string, string[]>();
  for (const [k, v] of new URLSearchParams(text)) {
    const list = fields.get(k);
    if (list) list.push(v);
    else fields.set(k, [v]);
  }
  return fields;
}

function decodeForm(text: string): JsonObject {
  // `curl -d '{"a":1}'` sends JSON labelled as a form: a form never starts with `{` or `[`, so
  // such a body is read as JSON (and `[1,2]` is 400 invalid_json, not an object, as any JSON body).
  if (/^\s*[[{]/.test(text)) return parseJsonObject(text);
  const fields = formFields(text);
  const payload = fields.size === 1 ? fields.get("payload") : undefined;
  // Only a `payload` that parses as a JSON object is unwrapped; any other stays a string field.
  const unwrapped = payload?.length === 1 ? jsonObjectOrNull(payload[0] as string) : null;
  if (unwrapped !== null) return unwrapped;
  // fromEntries defines own properties, so a `__proto__` field is just a field.
  return Object.fromEntries(
    [...fields].map(([k, values]) => [k, values.length === 1 ? (values[0] as string) : values]),
  );
}
