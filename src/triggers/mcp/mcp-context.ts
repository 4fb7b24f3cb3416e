/**
 * What every method of the MCP server (mcp.ts) is given for one request: who may call what (the
 * workflows served as tools that the request's credential opens) and which revision it speaks;
 * and how a result is dressed for that revision.
 */
import type { CompiledWorkflow, JsonObject } from "../../bundle.ts";
import type { Deployed } from "../../run/start/reruns.ts";

export const SERVER_INFO = { name: "workflow-edge", title: "workflow-edge workflows", version: "1.0.0" };
const SERVER_INFO_META = "io.modelcontextprotocol/serverInfo";

export interface McpContext {
  served: Deployed;
  env: Env;
  req: Request;
  carry: ((work: Promise<void>) => void) | undefined;
  /** The tools this request may see and call, by workflow. */
  opened: Array<{ key: string; wf: CompiledWorkflow }>;
  /** The stateless revision (2026-07-28): results carry `resultType` and the server's info. */
  stateless: boolean;
  /** The revision the request speaks. */
  version: string;
}

/** Whether tasks (2025-11-25) are offered to this request. */
export function tasksOffered(ctx: McpContext): boolean {
  return !ctx.stateless && ctx.version === "2025-11-25";
}

/** A result as the request's revision wants it (the stateless one: `resultType` and the server's info in `_meta`). */
export function dressed(result: JsonObject, ctx: McpContext): JsonObject {
  if (!ctx.stateless) return result;
  const meta =
    result._meta && typeof result._meta === "object" && !Array.isArray(result._meta) ? result._meta : {};
  return {
    ...result,
    resultType: "complete",
    _meta: { ...(meta as JsonObject), [SERVER_INFO_META]: SERVER_INFO },
  };
}

/** The tool (workflow) called `name` this request opens, or null. */
export function openedTool(ctx: McpContext, name: unknown): { key: string; wf: CompiledWorkflow } | null {
  return ctx.opened.find((f) => f.wf.name === name) ?? null;
}
