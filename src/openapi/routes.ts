/**
 * Serves the deployment's OpenAPI document at GET /openapi.json. It is computed from the bundle
 * the Worker imports (the same pure function the build can use to write a file), once per
 * isolate, so it always describes exactly the workflows this Worker runs.
 */
import type { Hono } from "hono";
import workflowBundle from "workflow-bundle";
import type { Bundle } from "../bundle.ts";
import { buildOpenApi } from "./build.ts";

const bundle: Bundle = workflowBundle;
let documentText: string | null = null;

export function mountOpenApi(app: Hono<{ Bindings: Env }>) {
  app.get("/openapi.json", () => {
    documentText ??= JSON.stringify(buildOpenApi(bundle));
    return new Response(documentText, {
      headers: {
        "content-type": "application/json; charset=utf-8",
        // It describes no secret (schemas and header names only), so API tools on other origins may read it.
        "access-control-allow-origin": "*",
      },
    });
  });
}
