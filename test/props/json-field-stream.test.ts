/**
 * Property (docs/operations.md, "Property tests"): for any JSON document and any way of cutting
 * its text into pieces, the pieces JsonFieldStream gives for a string field, joined, are that
 * field's value, exactly what JSON.parse reads.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { JsonFieldStream } from "../../src/common/json-field-stream.ts";
import { fcSettings } from "./fc-settings.ts";

/** `text` cut at the given (sorted, distinct) positions. */
function cut(text: string, at: number[]): string[] {
  const points = [...new Set(at.map((n) => n % (text.length + 1)))].sort((a, b) => a - b);
  const out: string[] = [];
  let from = 0;
  for (const p of points) {
    out.push(text.slice(from, p));
    from = p;
  }
  out.push(text.slice(from));
  return out;
}

describe("JsonFieldStream, for any document and any cut", () => {
  it("gives exactly the field's value", () => {
    fc.assert(
      fc.property(
        fc.dictionary(fc.string(), fc.jsonValue(), { maxKeys: 4 }),
        fc.string({ unit: "binary" }),
        fc.array(fc.nat(), { maxLength: 20 }),
        fc.boolean(),
        (others, value, at, nested) => {
          const field = nested ? { inner: { target: value } } : { target: value };
          // The field after the others (which may hold "target" keys deeper down, never at its place).
          const doc = JSON.stringify({ ...others, ...field, after: others });
          const path = nested ? ["inner", "target"] : ["target"];
          const reader = new JsonFieldStream(path);
          const got = cut(doc, at)
            .map((p) => reader.push(p))
            .join("");
          expect(got).toBe(value);
        },
      ),
      fcSettings(),
    );
  });
});
