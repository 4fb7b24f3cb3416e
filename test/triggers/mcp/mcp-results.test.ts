/**
 * What a tool call answers for a finished run (src/triggers/mcp/mcp-results.ts): the output as text
 * and structured content, or an error the calling model can read, never structured content that
 * breaks the tool's own outputSchema.
 */
import { describe, expect, it } from "vitest";
import type { Envelope } from "../../../src/run/envelope.ts";
import { RUN_ID_META, toolError, toolResult } from "../../../src/triggers/mcp/mcp-results.ts";
import { testWorkflow } from "../../support/compiled.ts";

const schema = { type: "object", required: ["ok"], properties: { ok: { type: "boolean" } } };
const typed = testWorkflow({ mcp: { title: "t", description: null, outputSchema: schema } });
const untyped = testWorkflow({ mcp: { title: "t", description: null, outputSchema: null } });

function ended(
  status: string,
  output: unknown,
  error: { code: string; message: string } | null = null,
): Envelope {
  return { run_id: "r1", status, output, error } as unknown as Envelope;
}

describe("a tool's result", () => {
  it("is the output as text and, for a tool with an outputSchema, as structured content", () => {
    expect(toolResult(typed, ended("complete", { ok: true }))).toEqual({
      content: [{ type: "text", text: '{"ok":true}' }],
      structuredContent: { ok: true },
      _meta: { [RUN_ID_META]: "r1" },
    });
    expect(toolResult(untyped, ended("complete", "plain"))).toEqual({
      content: [{ type: "text", text: '"plain"' }],
      _meta: { [RUN_ID_META]: "r1" },
    });
  });

  it("is an error, not structured content, when the output breaks the tool's outputSchema", () => {
    const r = toolResult(typed, ended("complete", { skipped: true, reason: "nothing to do" }));
    expect(r.isError).toBe(true);
    expect(r.structuredContent).toBeUndefined();
    expect((r.content as Array<{ text: string }>)[0]?.text).toMatch(
      /^output_mismatch: the run completed, but its output does not match the tool's outputSchema \(.*\); the output: \{"skipped":true,"reason":"nothing to do"\}$/,
    );
  });

  it("is an error with the run's code and message when it failed or was canceled", () => {
    expect(toolResult(typed, ended("failed", null, { code: "http_error", message: "POST x: 400" }))).toEqual({
      content: [{ type: "text", text: "http_error: POST x: 400" }],
      isError: true,
      _meta: { [RUN_ID_META]: "r1" },
    });
    expect(toolResult(typed, ended("canceled", null)).content).toEqual([
      { type: "text", text: "canceled: the run canceled" },
    ]);
    expect(toolError("rate_limited", "later")).toEqual({
      content: [{ type: "text", text: "rate_limited: later" }],
      isError: true,
    });
  });
});
