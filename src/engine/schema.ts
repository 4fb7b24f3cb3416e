/**
 * JSON Schema validation at run time (params.schema on invoke, sub-workflow input, agent params
 * and output, transform output.schema). Validators are built once per schema object and cached:
 * bundle schemas are long-lived objects, so identity is a good key.
 */
import { type OutputUnit, type Schema, Validator } from "@cfworker/json-schema";
import type { Json, JsonSchema } from "../bundle.ts";

export interface SchemaViolation {
  /** JSON Pointer into the validated value ("" = the value itself). */
  path: string;
  message: string;
}

const validators = new WeakMap<object, Validator>();

function draftOf(schema: JsonSchema): "4" | "7" | "2019-09" | "2020-12" {
  const id = typeof schema === "object" ? schema.$schema : undefined;
  if (typeof id !== "string") return "2020-12";
  if (id.includes("draft-04")) return "4";
  if (id.includes("draft-07") || id.includes("draft-06")) return "7";
  if (id.includes("2019-09")) return "2019-09";
  return "2020-12";
}

function validatorFor(schema: JsonSchema): Validator {
  if (typeof schema !== "object") return new Validator(schema, draftOf(schema), false);
  let v = validators.get(schema);
  if (!v) {
    v = new Validator(schema as Schema, draftOf(schema), false);
    validators.set(schema, v);
  }
  return v;
}

/** The leaf errors only: the validator also reports every enclosing keyword that failed. */
function leafErrors(errors: OutputUnit[]): OutputUnit[] {
  return errors.filter(
    (e) =>
      !errors.some(
        (o) =>
          o !== e &&
          o.instanceLocation.startsWith(e.instanceLocation) &&
          o.keywordLocation.startsWith(`${e.keywordLocation}/`),
      ),
  );
}

/**
 * The validator reports locations as URI fragments (`#/e%20f`): the JSON Pointer inside is the
 * fragment percent-decoded (RFC 6901 section 6). Its encoding came from encodeURI, so decoding
 * cannot fail.
 */
function pointerOf(instanceLocation: string): string {
  return decodeURIComponent(instanceLocation.replace(/^#/, ""));
}

/** Returns [] when `value` is valid. Paths are JSON Pointers ("/customer/email"). */
export function validateJson(schema: JsonSchema, value: Json): SchemaViolation[] {
  let result: ReturnType<Validator["validate"]>;
  try {
    result = validatorFor(schema).validate(value);
  } catch (err) {
    // The validator percent-encodes every property name it walks; one holding a lone surrogate
    // (legal as a JSON escape, `"\ud800"`, but not Unicode text) cannot be encoded.
    if (err instanceof URIError) {
      return [{ path: "", message: "a property name is not Unicode text (it holds a lone surrogate)" }];
    }
    throw err;
  }
  if (result.valid) return [];
  const seen = new Set<string>();
  const out: SchemaViolation[] = [];
  for (const e of leafErrors(result.errors)) {
    const path = pointerOf(e.instanceLocation);
    const message = e.error;
    const k = `${path}\u0000${message}`;
    if (seen.has(k)) continue;
    seen.add(k);
    out.push({ path, message });
  }
  return out;
}

/** `path: message; …` for an error message, the first `max` listed and the rest counted. */
export function describeViolations(
  violations: SchemaViolation[],
  max = 10,
  more: (n: number) => string = (n) => ` (and ${n} more)`,
): string {
  const listed = violations.slice(0, max).map(violationText).join("; ");
  return violations.length > max ? listed + more(violations.length - max) : listed;
}

/** One violation as every message shows it: `<JSON Pointer, or / for the whole value>: <what is wrong>`. */
export function violationText(v: SchemaViolation): string {
  return `${v.path || "/"}: ${v.message}`;
}
