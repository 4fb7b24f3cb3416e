/**
 * `confidence_threshold` on `core/classify` (docs/agents-and-tools.md on a built-in agent): the model is asked for
 * `ktsu_confidence` in its JSON, the contract reads it, and the output stays `{label}`.
 */
import { describe, expect, it } from "vitest";
import { run, uniqueKey } from "../harness.ts";
import { modelCalls } from "../tools-support.ts";

function text(reply: Record<string, unknown>, tag: string): string {
  return `${tag}\nREPLY=${JSON.stringify(reply)}`;
}

describe("core/classify under a confidence_threshold", () => {
  it("completes with {label} when the model is confident, keeping the confidence as an annotation", async () => {
    const tag = uniqueKey("cls");
    const e = await run("classify-confidence", { text: text({ label: "bug", ktsu_confidence: 0.9 }, tag) });
    expect(e.status).toBe("complete");
    expect(e.steps[0].output).toEqual({ label: "bug" });
    expect(e.steps[0].annotations).toEqual({ flags: [], rationale: null, confidence: 0.9 });
    // The model was told to report its confidence, in the instructions and the JSON Schema.
    const calls = await modelCalls(tag);
    expect(calls).toHaveLength(1);
    expect(JSON.stringify(calls[0]?.body)).toContain("ktsu_confidence");
  });

  it("fails low_confidence when the model is unsure", async () => {
    const e = await run("classify-confidence", {
      text: text({ label: "question", ktsu_confidence: 0.4 }, uniqueKey("cls")),
    });
    expect(e.status).toBe("failed");
    expect(e.error).toMatchObject({ code: "low_confidence", step: "sort" });
  });

  it("counts a missing confidence as 0", async () => {
    const e = await run("classify-confidence", { text: text({ label: "bug" }, uniqueKey("cls")) });
    expect(e.error.code).toBe("low_confidence");
    expect(e.error.message).toContain("missing");
  });
});
