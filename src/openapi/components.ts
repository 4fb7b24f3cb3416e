/**
 * Operations name their shapes by `$ref` into `components.schemas`, and every such reference must
 * resolve: the API's shared shapes come from schema/api.schema.json with their own references
 * rewritten, a workflow's params schema is embedded under a name components allow, and references
 * and responses are written by the same few helpers so they always name what is there.
 */
import apiShapes from "../../schema/api.schema.json" with { type: "json" };
import type { JsonObject, JsonSchema } from "../bundle.ts";

export const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
export const problem = (description: string) => ({
  description,
  content: { "application/problem+json": { schema: ref("Problem") } },
});
export const json = (description: string, schema: JsonObject) => ({
  description,
  content: { "application/json": { schema } },
});

/** Component names allow only `[A-Za-z0-9._-]`. */
export function componentName(s: string): string {
  return s.replace(/[^A-Za-z0-9._-]/g, "_");
}

function containsRef(v: unknown): boolean {
  if (Array.isArray(v)) return v.some(containsRef);
  if (v && typeof v === "object") {
    return Object.entries(v).some(([k, x]) => k === "$ref" || containsRef(x));
  }
  return false;
}

/**
 * A params schema moved into components keeps its own `#/...` references working only if it is
 * its own resource, so one that uses `$ref` gets an `$id` (a name, not a URL anyone fetches).
 */
export function embeddedSchema(name: string, schema: JsonSchema): JsonSchema {
  if (typeof schema === "boolean" || schema.$id !== undefined || !containsRef(schema)) return schema;
  return { $id: `urn:workflow-edge:params:${name}`, ...schema };
}

/**
 * The API's shapes (envelope, step record, problem, approval, run list, …) from their one source,
 * schema/api.schema.json, with references pointed at this document's components.
 */
export function sharedSchemas(): Record<string, JsonObject> {
  const text = JSON.stringify(apiShapes.$defs).replaceAll("#/$defs/", "#/components/schemas/");
  return JSON.parse(text) as Record<string, JsonObject>;
}
