/**
 * One string field read from JSON as it arrives in pieces (src/common/json-field-stream.ts): what a
 * chat caller sees of a streaming agent's answer before the model has finished it.
 */
import { describe, expect, it } from "vitest";
import { JsonFieldStream } from "../../src/common/json-field-stream.ts";

/** Everything the reader gives for `pieces`, in order. */
function read(path: string[], pieces: string[]): string[] {
  const r = new JsonFieldStream(path);
  return pieces.map((p) => r.push(p));
}

describe("JsonFieldStream", () => {
  it("gives the field's text as soon as each piece holds some of it", () => {
    expect(read(["answer"], ['{"answer": "Hel', "lo, wor", 'ld", "n": 1}'])).toEqual([
      "Hel",
      "lo, wor",
      "ld",
    ]);
  });

  it("decodes escapes, also one split across pieces", () => {
    const out = read(["a"], ['{"a": "x\\', 'ny \\"q\\" \\\\ \\/ \\t \\u00', 'fc end"}']);
    expect(out.join("")).toBe('x\ny "q" \\ / \t ü end');
  });

  it("never splits a surrogate pair, even when its two escapes arrive apart", () => {
    const out = read(["a"], ['{"a": "smile \\ud83d', '\\ude00!"}']);
    expect(out).toEqual(["smile ", "😀!"]);
  });

  it("finds a nested field and passes over others with the same name elsewhere", () => {
    const doc =
      '{"answer": {"text": "not this"}, "meta": {"text": "nor this"}, "reply": {"text": "this", "x": [1, {"text": "no"}]}}';
    expect(read(["reply", "text"], [doc]).join("")).toBe("this");
  });

  it("passes over numbers, literals, arrays and strings holding braces before the field", () => {
    const doc =
      '{"n": -1.5e3, "t": true, "z": null, "s": "a \\" } ] {", "l": [1, "x", {"answer": "inner"}], "answer": "outer"}';
    for (let size = 1; size <= doc.length; size++) {
      const pieces = doc.match(new RegExp(`[\\s\\S]{1,${size}}`, "g")) as string[];
      expect(read(["answer"], pieces).join(""), `pieces of ${size}`).toBe("outer");
    }
  });

  it("skips what a model writes before the JSON (a code fence)", () => {
    expect(read(["a"], ["Here you go:\n```json\n", '{"a": "b"}\n```']).join("")).toBe("b");
  });

  it("gives only the first occurrence, and nothing once the field has closed", () => {
    expect(read(["a"], ['{"a": "one", "a": "two"}']).join("")).toBe("one");
  });

  it("gives nothing for a field that is not a string or not there", () => {
    expect(read(["a"], ['{"a": 12, "b": "x"}']).join("")).toBe("");
    expect(read(["a"], ['{"a": ["x"]}']).join("")).toBe("");
    expect(read(["a"], ['{"b": "x"}']).join("")).toBe("");
  });
});
