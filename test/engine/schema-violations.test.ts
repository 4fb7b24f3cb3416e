/**
 * JSON Schema validation (docs/http-api.md: `errors[].path` is a JSON Pointer into the
 * body): paths are RFC 6901 pointers, not URI fragments, and no value makes validation throw.
 */
import { describe, expect, it } from "vitest";
import { validateJson } from "../../src/engine/schema.ts";

describe("validateJson", () => {
  const schema = {
    type: "object",
    properties: { "e f": { type: "object", properties: { 'g"h': { type: "string" } } } },
    additionalProperties: { type: "string" },
  };

  it("gives RFC 6901 JSON Pointers: only ~ and / escaped, nothing percent-encoded", () => {
    const violations = validateJson(schema, {
      "e f": { 'g"h': 1 },
      "a/b~c": 2,
      "50%": 3,
      "#x é": 4,
    });
    expect(violations.map((v) => v.path).sort()).toEqual(["/#x é", "/50%", "/a~1b~0c", '/e f/g"h']);
  });

  it("reports a property name that is not Unicode text (a lone surrogate) instead of throwing", () => {
    const value = JSON.parse('{"\\ud800": 1, "ok": "x"}');
    const violations = validateJson(schema, value);
    expect(violations).toHaveLength(1);
    expect(violations[0]?.path).toBe("");
    expect(violations[0]?.message).toMatch(/lone surrogate/);
  });

  it("still accepts a valid value", () => {
    expect(validateJson(schema, { "e f": { 'g"h': "s" }, other: "t" })).toEqual([]);
  });
});
