/**
 * The routes of the protocols that start runs (docs/protocols.md): the OpenAI-compatible endpoint
 * (`POST /v1/chat/completions`, `GET /v1/models[/{name}]`: src/triggers/chat/), the MCP server
 * (`POST /mcp`: src/triggers/mcp/), A2A agents (`/a2a/{name}`: src/triggers/a2a/). Each trigger answers in its protocol's own shape, errors
 * included; these routes only hand it the request.
 */
import type { Hono } from "hono";
import type { Deployed } from "../run/start/reruns.ts";
import { a2aCard, a2aEndpoint } from "../triggers/a2a/a2a.ts";
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
  // A2A 1.0 (docs/a2a.md): each workflow with invoke.a2a is an agent of its own.
  app.get("/a2a/:name/.well-known/agent-card.json", (c) => a2aCard(served, c.req.param("name"), c.req.raw));
  app.post("/a2a/:name", (c) => a2aEndpoint(served, c.env, c.req.param("name"), c.req.raw, waitUntilOf(c)));
}
