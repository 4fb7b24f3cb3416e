/**
 * Reads an invoke body: at most 1 MiB (checked on the declared length and again while reading,
 * so a lying or chunked request cannot get past it), empty = `{}`, otherwise a JSON object.
 */
import type { JsonObject } from "../bundle.ts";
import { HttpProblem } from "./problem.ts";

export const MAX_BODY_BYTES = 1024 * 1024;

export async function readParams(req: Request): Promise<JsonObject> {
  const declared = Number(req.headers.get("content-length") ?? "0");
  if (declared > MAX_BODY_BYTES) throw tooLarge();
  const chunks: Uint8Array[] = [];
  let size = 0;
  if (req.body) {
    const reader = req.body.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > MAX_BODY_BYTES) {
        await reader.cancel();
        throw tooLarge();
      }
      chunks.push(value);
    }
  }
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const c of chunks) {
    bytes.set(c, offset);
    offset += c.byteLength;
  }
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes);
  } catch {
    throw new HttpProblem("invalid_json", "the body is not valid UTF-8");
  }
  if (text.trim() === "") return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    // The parser's message quotes the body, which may hold anything: don't echo it.
    throw new HttpProblem("invalid_json", "the body is not valid JSON");
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new HttpProblem("invalid_json", "the body must be a JSON object (the workflow's params)");
  }
  return value as JsonObject;
}

function tooLarge(): HttpProblem {
  return new HttpProblem("payload_too_large", `the body is over ${MAX_BODY_BYTES} bytes (1 MiB)`);
}
