/**
 * How the agent step reads a model's JSON reply: models wrap JSON in fences or a sentence,
 * and the step output must still be the JSON itself.
 */
import { describe, expect, it } from "vitest";
import { parseReply } from "../../src/steps/agent.ts";

describe("reading a model's JSON reply", () => {
  it("reads bare JSON", () => {
    expect(parseReply('{"a":1}')).toEqual({ ok: true, value: { a: 1 } });
  });

  it("reads JSON inside a ```json fence", () => {
    expect(parseReply('```json\n{"a":[1,2]}\n```')).toEqual({ ok: true, value: { a: [1, 2] } });
  });

  it("reads the JSON object out of a sentence around it", () => {
    expect(parseReply('Here you go: {"label": "bug"} Hope that helps.')).toEqual({
      ok: true,
      value: { label: "bug" },
    });
  });

  it("reads a top-level array", () => {
    expect(parseReply("Result: [1, 2, 3]")).toEqual({ ok: true, value: [1, 2, 3] });
  });

  it("reports a reply that holds no JSON as not JSON", () => {
    expect(parseReply("I cannot help with that.")).toMatchObject({
      ok: false,
      error: expect.stringContaining("not JSON"),
    });
  });

  it("reports an empty reply as not JSON", () => {
    expect(parseReply("")).toMatchObject({ ok: false });
  });
});
