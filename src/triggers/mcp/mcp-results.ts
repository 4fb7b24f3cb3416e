/**
 * What a tool call of the MCP server answers (docs/protocols.md, "MCP server"), for `tools/call` and
 * for `tasks/result` alike: a finished run's output as text and, when the tool declares an
 * `outputSchema`, as `structuredContent`; anything that went wrong as a result with `isError: true`
 * (the code and the message as text), so the calling model can read it and correct itself.
 */
import type { CompiledWorkflow, JsonObject } from "../../bundle.ts";
import { validateJson } from "../../engine/schema.ts";
import type { Envelope } from "../../run/envelope.ts";

/** The key of `_meta` that names the run a result came from. */
export const RUN_ID_META = "io.workflow-edge/run_id";

/** What the caller (or its model) is told went wrong: `isError`, the code and the message as text. */
export function toolError(code: string, message: string, extra: JsonObject = {}): JsonObject {
  return { content: [{ type: "text", text: `${code}: ${message}` }], isError: true, ...extra };
}

/** A finished run as a tool's result. */
export function toolResult(wf: CompiledWorkflow, envelope: Envelope): JsonObject {
  const meta = { _meta: { [RUN_ID_META]: envelope.run_id } };
  if (envelope.status !== "complete") {
    const error = envelope.error ?? { code: envelope.status, message: `the run ${envelope.status}` };
    return toolError(error.code, error.message, meta);
  }
  const output = envelope.output;
  const text = JSON.stringify(output);
  const schema = wf.mcp?.outputSchema ?? null;
  if (schema === null) return { content: [{ type: "text", text }], ...meta };
  // The tool promised this shape: an output that breaks it (a skipped last step) is said, not sent as structured.
  const violations = validateJson(schema, output);
  if (violations.length > 0) {
    const first = violations[0] as { path: string; message: string };
    return toolError(
      "output_mismatch",
      `the run completed, but its output does not match the tool's outputSchema (${first.path || "/"}: ${first.message}); the output: ${text}`,
      meta,
    );
  }
  return { content: [{ type: "text", text }], structuredContent: output, ...meta };
}
