/**
 * Validates a real API answer against its shape in schema/api.schema.json (the one source the
 * OpenAPI document references): a missing, misspelled or extra field fails the test with the
 * JSON Pointer of what is wrong.
 */
import { Validator } from "@cfworker/json-schema";
import { expect } from "vitest";
import apiShapes from "../../schema/api.schema.json" with { type: "json" };

export type ApiShape = keyof typeof apiShapes.$defs;

const validators = new Map<ApiShape, Validator>();

function validatorFor(shape: ApiShape): Validator {
  let v = validators.get(shape);
  if (!v) {
    v = new Validator({ $ref: `${apiShapes.$id}#/$defs/${shape}` }, "2020-12", false);
    v.addSchema(apiShapes as never);
    validators.set(shape, v);
  }
  return v;
}

/** Asserts `value` is a valid `shape`; lists every violation otherwise. */
export function expectShape(shape: ApiShape, value: unknown): void {
  const result = validatorFor(shape).validate(value);
  const violations = result.errors
    .filter((e) => e.keyword !== "$ref" && e.keyword !== "properties" && e.keyword !== "items")
    .map((e) => `${e.instanceLocation}: ${e.error}`);
  expect(violations, `not a valid ${shape}`).toEqual([]);
  expect(result.valid).toBe(true);
}
