/**
 * Checks field names, types and ranges of a YAML file against schema/workflow.schema.json, the
 * same JSON Schema editors use through yaml-language-server, so the build and the editor cannot
 * drift apart. This is a small interpreter of the keywords that schema uses (not a general
 * validator): it knows where each value sits in the YAML, turns every violation into a message a
 * person can act on, and suggests the closest known field for a typo.
 */
import { readFileSync } from "node:fs";
import { hint } from "../common/did-you-mean.ts";
import type { DiagnosticSink } from "./diagnostics.ts";
import type { DataPath, SourceFile } from "./yaml-source.ts";

export interface FormatSchema {
  $ref?: string;
  title?: string;
  type?: string | string[];
  const?: unknown;
  enum?: unknown[];
  anyOf?: FormatSchema[];
  properties?: Record<string, FormatSchema>;
  additionalProperties?: boolean | FormatSchema;
  required?: string[];
  items?: FormatSchema;
  minItems?: number;
  minProperties?: number;
  maxProperties?: number;
  minLength?: number;
  pattern?: string;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  errorMessage?: string;
  patternErrorMessage?: string;
  "x-applies-to"?: string[];
  $defs?: Record<string, FormatSchema>;
}

export const FORMAT_SCHEMA: FormatSchema = JSON.parse(
  readFileSync(new URL("../../schema/workflow.schema.json", import.meta.url), "utf8"),
);

export type FileKind = "workflowFile" | "agentFile" | "gatewayFile" | "serverFile";

/** Step field -> the step kinds it belongs to (from `x-applies-to`; absent = every kind). */
export function stepFieldKinds(): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const [field, s] of Object.entries(FORMAT_SCHEMA.$defs?.step?.properties ?? {})) {
    const kinds = s["x-applies-to"];
    if (kinds) out.set(field, kinds);
  }
  return out;
}

/** Reports every structural problem of `file` against the schema's `$defs[kind]`. */
export function checkStructure(file: SourceFile, kind: FileKind, sink: DiagnosticSink): void {
  const root = FORMAT_SCHEMA.$defs?.[kind];
  if (!root) throw new Error(`schema has no $defs/${kind}`);
  new Walker(file, sink).check(file.data, root, []);
}

/** The same check against `$defs[def]` of another format schema (schema/test.schema.json). */
export function checkAgainstSchema(
  file: SourceFile,
  doc: FormatSchema,
  def: string,
  sink: DiagnosticSink,
): void {
  const root = doc.$defs?.[def];
  if (!root) throw new Error(`schema has no $defs/${def}`);
  new Walker(file, sink, doc).check(file.data, root, []);
}

class Walker {
  private readonly file: SourceFile;
  private readonly sink: DiagnosticSink;
  /** The schema document `$ref`s resolve in. */
  private readonly doc: FormatSchema;

  constructor(file: SourceFile, sink: DiagnosticSink, doc: FormatSchema = FORMAT_SCHEMA) {
    this.doc = doc;
    this.file = file;
    this.sink = sink;
  }

  check(value: unknown, schemaIn: FormatSchema, path: DataPath): void {
    const deref = (s: FormatSchema) => derefIn(this.doc, s);
    let schema = deref(schemaIn);
    if (schema.anyOf) {
      const branch = schema.anyOf.map(deref).find((b) => b.type === undefined || typeMatches(value, b.type));
      if (!branch) {
        const words = schema.anyOf.map((b) => typeWords(deref(b).type)).join(" or ");
        this.report(path, `must be ${words}, got ${describe(value)}`);
        return;
      }
      schema = { ...branch, ...withoutKeys(schema, ["anyOf"]) };
    }

    if ("const" in schema && value !== schema.const) {
      this.report(path, `must be \`${String(schema.const)}\`, got ${show(value)}`);
      return;
    }
    if (schema.enum && !schema.enum.includes(value)) {
      const options = schema.enum.map((e) => `\`${String(e)}\``).join(", ");
      const h = typeof value === "string" ? hint(value, schema.enum.map(String)) : "";
      this.report(path, `must be one of ${options}, got ${show(value)}${h}`);
      return;
    }
    if (schema.type !== undefined && !typeMatches(value, schema.type)) {
      const expected = schema.errorMessage ?? `must be ${typeWords(schema.type)}`;
      this.report(path, `${expected}, got ${describe(value)}`);
      return;
    }

    if (typeof value === "string") this.checkString(value, schema, path);
    else if (typeof value === "number") this.checkNumber(value, schema, path);
    else if (Array.isArray(value)) this.checkArray(value, schema, path);
    else if (value !== null && typeof value === "object") {
      this.checkObject(value as Record<string, unknown>, schema, path);
    }
  }

  private checkString(value: string, schema: FormatSchema, path: DataPath): void {
    if (schema.minLength !== undefined && value.length < schema.minLength) {
      this.report(path, "must not be empty");
    } else if (schema.pattern !== undefined && !new RegExp(schema.pattern, "u").test(value)) {
      this.report(
        path,
        `${schema.patternErrorMessage ?? `must match ${schema.pattern}`}, got ${show(value)}`,
      );
    }
  }

  private checkNumber(value: number, schema: FormatSchema, path: DataPath): void {
    const bad =
      (schema.minimum !== undefined && value < schema.minimum) ||
      (schema.maximum !== undefined && value > schema.maximum) ||
      (schema.exclusiveMinimum !== undefined && value <= schema.exclusiveMinimum);
    if (bad) this.report(path, `${schema.errorMessage ?? "is out of range"}, got ${value}`);
  }

  private checkArray(value: unknown[], schema: FormatSchema, path: DataPath): void {
    if (schema.minItems !== undefined && value.length < schema.minItems) {
      this.report(path, `must have at least ${schema.minItems} item${schema.minItems === 1 ? "" : "s"}`);
    }
    if (schema.items) {
      const items = schema.items;
      value.forEach((item, i) => {
        this.check(item, items, [...path, i]);
      });
    }
  }

  private checkObject(value: Record<string, unknown>, schema: FormatSchema, path: DataPath): void {
    const keys = Object.keys(value);
    if (
      (schema.minProperties !== undefined && keys.length < schema.minProperties) ||
      (schema.maxProperties !== undefined && keys.length > schema.maxProperties)
    ) {
      if (schema.errorMessage) {
        this.report(path, schema.errorMessage);
        return;
      }
    }
    for (const field of schema.required ?? []) {
      if (!(field in value)) {
        this.sink.error(
          this.file.display,
          this.file.at(path),
          `${this.prefix(path)}missing required field \`${this.rel([...path, field])}\``,
        );
      }
    }
    const props = schema.properties ?? {};
    for (const key of keys) {
      const sub = props[key];
      if (sub) {
        this.check(value[key], sub, [...path, key]);
      } else if (schema.additionalProperties === false) {
        const where = this.file.at([...path, key], "key");
        const msg = `${this.prefix(path)}unknown field \`${this.rel([...path, key])}\`${hint(key, Object.keys(props))}`;
        this.sink.error(this.file.display, where, msg);
      } else if (typeof schema.additionalProperties === "object") {
        this.check(value[key], schema.additionalProperties, [...path, key]);
      }
    }
  }

  private report(path: DataPath, problem: string): void {
    const rel = this.rel(path);
    const label = path.length === 0 ? "the file" : rel === "" ? "the step" : `\`${rel}\``;
    this.sink.error(this.file.display, this.file.at(path), `${this.prefix(path)}${label} ${problem}`);
  }

  /** `step \`fetch\`: ` for paths inside a pipeline step, else "". */
  private prefix(path: DataPath): string {
    if (path[0] !== "pipeline" || typeof path[1] !== "number") return "";
    return `${stepLabel(this.file.data, path[1])}: `;
  }

  /** The path as the user wrote it, relative to the step when inside one: `model.max_tokens`. */
  private rel(path: DataPath): string {
    const inStep = path[0] === "pipeline" && typeof path[1] === "number";
    return dotted(inStep ? path.slice(2) : path);
  }
}

/** `step \`id\`` or `step #n` when the id is missing. */
export function stepLabel(data: unknown, index: number): string {
  const steps = (data as { pipeline?: unknown })?.pipeline;
  const step = Array.isArray(steps) ? steps[index] : undefined;
  const id = step && typeof step === "object" ? (step as { id?: unknown }).id : undefined;
  return typeof id === "string" ? `step \`${id}\`` : `step #${index + 1}`;
}

export function dotted(path: DataPath): string {
  let out = "";
  for (const p of path) out += typeof p === "number" ? `[${p}]` : out === "" ? p : `.${p}`;
  return out;
}

function derefIn(doc: FormatSchema, schema: FormatSchema): FormatSchema {
  let s = schema;
  for (let i = 0; s.$ref && i < 20; i++) {
    const name = s.$ref.replace(/^#\/\$defs\//, "");
    const target = doc.$defs?.[name];
    if (!target) throw new Error(`schema: unresolved $ref ${s.$ref}`);
    // Keywords next to $ref (a description, x-applies-to) apply too.
    s = { ...target, ...withoutKeys(s, ["$ref"]) };
  }
  return s;
}

function withoutKeys(s: FormatSchema, keys: string[]): FormatSchema {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(s)) if (!keys.includes(k)) out[k] = v;
  return out as FormatSchema;
}

export function jsonType(v: unknown): string {
  if (v === null || v === undefined) return "null";
  if (Array.isArray(v)) return "array";
  if (typeof v === "number") return Number.isInteger(v) ? "integer" : "number";
  return typeof v;
}

function typeMatches(v: unknown, type: string | string[]): boolean {
  const t = jsonType(v);
  const types = Array.isArray(type) ? type : [type];
  return types.some((x) => x === t || (x === "number" && t === "integer"));
}

const WORDS: Record<string, string> = {
  string: "a string",
  number: "a number",
  integer: "an integer",
  boolean: "true or false",
  object: "a mapping",
  array: "a list",
  null: "empty",
};

function typeWords(type: string | string[] | undefined): string {
  if (type === undefined) return "a value";
  const types = Array.isArray(type) ? type : [type];
  return types.map((t) => WORDS[t] ?? t).join(" or ");
}

function describe(v: unknown): string {
  const t = jsonType(v);
  if (t === "string" || t === "number" || t === "integer" || t === "boolean")
    return `${WORDS[t]} (${show(v)})`;
  return t === "null" ? "nothing" : (WORDS[t] ?? t);
}

export function show(v: unknown): string {
  if (typeof v === "string") return `\`${v}\``;
  if (v === null || v === undefined) return "nothing";
  if (Array.isArray(v)) return "a list";
  if (typeof v === "object") return "a mapping";
  return String(v);
}
