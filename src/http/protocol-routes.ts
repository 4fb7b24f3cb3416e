/**
 * The routes of the protocols that start runs (docs/protocols.md): the OpenAI-compatible endpoint
 * (`POST /v1/chat/completions`, `GET /v1/models[/{name}]`: src/triggers/chat/), the MCP server
 * (`POST /mcp`: src/triggers/mcp/). Each trigger answers in its protocol's own shape, errors
 * included; these routes only hand it the request.
 */
import type { Hono } from "hono";
import type { Deployed } from "../run/start/reruns.ts";
import { chatCompletions, modelList, oneModel } from "../triggers/chat/chat.ts";
import { mcpEndpoint } from "../triggers/mcp/mcp.ts";

/** The request's `waitUntil` (none when the app is called without an execution context). */
export function waitUntilOf(c: {
  executionCtx: { waitUntil(work: Promise<unknown>): void };
}): ((work: Promise<void>) => void) | undefined {
  try {
    const ctx = c.executionCtx;
    return (work) => ctx.waitUntil(work);
  } catch {
    return undefined;
  }
}

export function mountProtocolRoutes(app: Hono<{ Bindings: Env }>, served: Deployed) {
  app.post("/v1/chat/completions", (c) => chatCompletions(served, c.env, c.req.raw, waitUntilOf(c)));
  app.get("/v1/models", () => modelList(served.bundle));
  app.get("/v1/models/:name", (c) => oneModel(served.bundle, c.req.param("name")));
  // Streamable HTTP without sessions: POST only (GET is 405 with Allow, as for every known path).
  app.post("/mcp", (c) => mcpEndpoint(served, c.env, c.req.raw, waitUntilOf(c)));
}
