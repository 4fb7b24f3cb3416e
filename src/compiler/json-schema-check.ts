/**
 * Checks the JSON Schemas users write (params.schema, output.schema, agent schemas) at build
 * time, so `type: strnig` fails the build instead of the first request. Uses a vendored, offline
 * copy of the draft 2020-12 meta-schema (schema/json-schema-2020-12.meta.json) with the same
 * validator library the Worker uses, plus what a meta-schema cannot say: that `pattern` is a
 * valid regex and that a local `$ref` points somewhere.
 */
import { readFileSync } from "node:fs";
import { type OutputUnit, type Schema, Validator } from "@cfworker/json-schema";
import { hint } from "../common/did-you-mean.ts";
import type { DiagnosticSink } from "./diagnostics.ts";
import { dotted } from "./structure-check.ts";
import type { DataPath, SourceFile } from "./yaml-source.ts";

const META = JSON.parse(
  readFileSync(new URL("../../schema/json-schema-2020-12.meta.json", import.meta.url), "utf8"),
) as Schema;
const metaValidator = new Validator(META, "2020-12", false);

const SIMPLE_TYPES = ["array", "boolean", "integer", "null", "number", "object", "string"];

/** Keywords of 2020-12 (and the common older ones), for typo warnings such as `requried`. */
const KEYWORDS = [
  ...Object.keys((META as { properties: object }).properties),
  "dependencies",
  "additionalItems",
  "$recursiveRef",
  "$recursiveAnchor",
];

/** Keys whose value is a map of name -> subschema. */
const SCHEMA_MAPS = ["properties", "patternProperties", "$defs", "definitions", "dependentSchemas"];
/** Keys whose value is one subschema. */
const SCHEMA_ONE = [
  "items",
  "additionalProperties",
  "contains",
  "not",
  "if",
  "then",
  "else",
  "propertyNames",
  "unevaluatedItems",
  "unevaluatedProperties",
  "contentSchema",
  "additionalItems",
];
/** Keys whose value is a list of subschemas. */
const SCHEMA_LISTS = ["allOf", "anyOf", "oneOf", "prefixItems"];

/** Reports every problem of the schema at `path` in `file` (`what` names it: `params.schema`). */
export function checkUserSchema(
  file: SourceFile,
  path: DataPath,
  schema: unknown,
  what: string,
  sink: DiagnosticSink,
): void {
  if (typeof schema === "boolean") return;
  if (schema === null || typeof schema !== "object" || Array.isArray(schema)) return; // structure check reports it
  const draft = (schema as { $schema?: unknown }).$schema;
  // Older drafts differ in details (`items` arrays, `definitions`); only 2020-12 is checked strictly.
  const strict = draft === undefined || (typeof draft === "string" && draft.includes("2020-12"));
  if (strict) {
    const result = metaValidator.validate(schema);
    if (!result.valid) reportMetaErrors(file, path, schema, what, result.errors, sink);
  }
  walkSchema(schema, [], (node, rel) => {
    const at = [...path, ...rel];
    for (const key of Object.keys(node)) {
      if (key.startsWith("$") || key.startsWith("x-") || KEYWORDS.includes(key)) continue;
      const h = hint(key, KEYWORDS);
      if (h)
        sink.warning(
          file.display,
          file.at([...at, key], "key"),
          `${what}: unknown JSON Schema keyword \`${key}\`${h}`,
        );
    }
    if (typeof node.pattern === "string") {
      try {
        new RegExp(node.pattern, "u");
      } catch {
        sink.error(
          file.display,
          file.at([...at, "pattern"]),
          `${what}: \`${dotted([...rel, "pattern"])}\` is not a valid regular expression`,
        );
      }
    }
    const ref = node.$ref;
    if (
      typeof ref === "string" &&
      (ref === "#" || ref.startsWith("#/")) &&
      resolvePointer(schema, ref.slice(1)) === undefined
    ) {
      sink.error(
        file.display,
        file.at([...at, "$ref"]),
        `${what}: \`$ref: ${ref}\` points to nothing in this schema`,
      );
    }
  });
}

function reportMetaErrors(
  file: SourceFile,
  path: DataPath,
  schema: object,
  what: string,
  errors: OutputUnit[],
  sink: DiagnosticSink,
): void {
  // Report the deepest failing locations only: the validator also lists every enclosing keyword.
  const depth = (e: OutputUnit) => e.instanceLocation.split("/").length;
  const max = Math.max(...errors.map(depth));
  const deepest = errors.filter((e) => depth(e) === max);
  const locations = [...new Set(deepest.map((e) => e.instanceLocation))];
  for (const loc of locations) {
    const rel = loc
      .replace(/^#\/?/, "")
      .split("/")
      .filter((s) => s !== "")
      .map((s) => decodeURIComponent(s).replace(/~1/g, "/").replace(/~0/g, "~"))
      .map((s) => (/^\d+$/.test(s) ? Number(s) : s));
    const value = rel.reduce<unknown>((v, k) => (v as Record<string | number, unknown>)?.[k], schema);
    const last = rel[rel.length - 1];
    const at = file.at([...path, ...rel]);
    const where = rel.length === 0 ? what : `${what}: \`${dotted(rel)}\``;
    if (last === "type" && typeof value === "string") {
      sink.error(
        file.display,
        at,
        `${where} \`${value}\` is not a JSON Schema type (one of ${SIMPLE_TYPES.join(", ")})${hint(value, SIMPLE_TYPES)}`,
      );
      continue;
    }
    const unit = deepest.find(
      (e) => e.instanceLocation === loc && e.keyword !== "anyOf" && e.keyword !== "$ref",
    );
    sink.error(file.display, at, `${where} is not valid JSON Schema: ${unit?.error ?? "invalid"}`);
  }
}

function walkSchema(
  node: unknown,
  rel: DataPath,
  visit: (n: Record<string, unknown>, rel: DataPath) => void,
): void {
  if (!node || typeof node !== "object" || Array.isArray(node)) return;
  const obj = node as Record<string, unknown>;
  visit(obj, rel);
  for (const key of SCHEMA_MAPS) {
    const m = obj[key];
    if (m && typeof m === "object" && !Array.isArray(m)) {
      for (const [k, v] of Object.entries(m)) walkSchema(v, [...rel, key, k], visit);
    }
  }
  for (const key of SCHEMA_ONE) walkSchema(obj[key], [...rel, key], visit);
  for (const key of SCHEMA_LISTS) {
    const l = obj[key];
    if (Array.isArray(l)) {
      l.forEach((v, i) => {
        walkSchema(v, [...rel, key, i], visit);
      });
    }
  }
}

function resolvePointer(root: unknown, pointer: string): unknown {
  if (pointer === "") return root;
  let v: unknown = root;
  for (const raw of pointer.slice(1).split("/")) {
    const seg = decodeURIComponent(raw).replace(/~1/g, "/").replace(/~0/g, "~");
    if (v === null || typeof v !== "object") return undefined;
    v = (v as Record<string, unknown>)[seg];
    if (v === undefined) return undefined;
  }
  return v;
}
