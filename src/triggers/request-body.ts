/**
 * Reads an invoke body: at most 1 MiB (checked on the declared length and again while reading,
 * so a lying or chunked request cannot get past it), at most MAX_JSON_DEPTH levels of nesting
 * (everything downstream — hashing, masking, schema validation, storage — walks the params
 * recursively, and 1 MiB of `[` is 1 million levels), empty = `{}`, otherwise a JSON object.
 */
import type { JsonObject } from "../bundle.ts";
import { MAX_JSON_DEPTH, nestsDeeperThan } from "../common/json-depth.ts";
import { HttpProblem } from "../common/problem.ts";
import { readCapped } from "../engine/read-capped.ts";
import { whereJsonBreaks } from "./json-syntax.ts";

export const MAX_BODY_BYTES = 1024 * 1024;

/** The raw body bytes (413 over 1 MiB): signatures are verified on exactly these. */
export function readBody(req: Request): Promise<Uint8Array<ArrayBuffer>> {
  // readCapped copies into a fresh ArrayBuffer, which Web Crypto accepts as is.
  return readCapped(req, MAX_BODY_BYTES, tooLarge) as Promise<Uint8Array<ArrayBuffer>>;
}

export async function readParams(req: Request): Promise<JsonObject> {
  return parseJsonObject(utf8(await readBody(req)));
}

/**
 * A route's JSON object body (empty = `{}`); anything else is the route's own problem (`refused`),
 * except a body over 1 MiB, which stays 413 `payload_too_large`.
 */
export async function readObjectBody(req: Request, refused: () => HttpProblem): Promise<JsonObject> {
  try {
    return await readParams(req);
  } catch (e) {
    if (e instanceof HttpProblem && e.code === "payload_too_large") throw e;
    throw refused();
  }
}

/** The body as text; not UTF-8 is 400 invalid_json (the code every body-syntax error has). */
export function utf8(bytes: Uint8Array): string {
  try {
    return new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes);
  } catch {
    throw new HttpProblem("invalid_json", "the body is not valid UTF-8");
  }
}

/** A JSON object body (empty = `{}`), nesting at most MAX_JSON_DEPTH levels. */
export function parseJsonObject(text: string): JsonObject {
  if (text.trim() === "") return {};
  refuseDeepNesting(text);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    // The parser's message quotes the body, which may hold anything: don't echo it, say where.
    throw new HttpProblem("invalid_json", `the body is not valid JSON${whereJsonBreaks(text)}`);
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new HttpProblem("invalid_json", "the body must be a JSON object (the workflow's params)");
  }
  return value as JsonObject;
}

/**
 * `text` as a JSON object, or null when it is not valid JSON or not an object. The nesting limit
 * still holds (400): whatever parses here becomes params like any body.
 */
export function jsonObjectOrNull(text: string): JsonObject | null {
  if (!text.trimStart().startsWith("{")) return null;
  refuseDeepNesting(text);
  try {
    const value: unknown = JSON.parse(text);
    return value !== null && typeof value === "object" && !Array.isArray(value)
      ? (value as JsonObject)
      : null;
  } catch {
    return null;
  }
}

function refuseDeepNesting(text: string): void {
  if (nestsDeeperThan(text, MAX_JSON_DEPTH)) {
    throw new HttpProblem(
      "invalid_json",
      `the body nests objects and arrays deeper than ${MAX_JSON_DEPTH} levels`,
    );
  }
}

function tooLarge(): HttpProblem {
  return new HttpProblem("payload_too_large", `the body is over ${MAX_BODY_BYTES} bytes (1 MiB)`);
}
