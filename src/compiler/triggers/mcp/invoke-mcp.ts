/**
 * Compiles `invoke.mcp` (docs/protocols.md, "MCP server"): the workflow served as a tool of
 * `POST /mcp`, with its `title` and `description` (defaults: the workflow's name and description).
 * Root workflows only, and never with a signature scheme (an MCP host sends a key, it signs
 * nothing). The tool's `outputSchema` needs the whole project (the last step's shape): it is set
 * once every file is compiled (output-shapes.ts, `runOutputSchema`).
 */
import type { CompiledAuth, CompiledMcp } from "../../../bundle.ts";
import { isObject } from "../../../common/guards.ts";
import { refuseNotInvocable, refuseSignature } from "../../scoped-templates.ts";
import type { InvokeContext, Report } from "../invoke-context.ts";

export function compileMcp(
  invoke: Record<string, unknown>,
  auth: CompiledAuth | null,
  description: string | null,
  ctx: InvokeContext,
  err: Report,
): CompiledMcp | null {
  const block = invoke.mcp;
  if (!isObject(block)) return null;
  if (refuseNotInvocable("mcp", ctx, err) || refuseSignature("mcp", auth, err, "an MCP host")) return null;
  return {
    title: typeof block.title === "string" ? block.title : ctx.name,
    description: typeof block.description === "string" ? block.description : description,
    outputSchema: null,
  };
}
