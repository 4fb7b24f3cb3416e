/**
 * The OpenAPI 3.1 description of a deployment is a pure function of its compiled bundle, so the
 * build can write it to a file and the Worker can serve the same document computed from the bundle
 * it imports. This module puts the document together (the invoke operations, the shared routes,
 * the components) and says once what every path answers to a method it does not serve.
 */
import type { Bundle, JsonObject, JsonSchema } from "../bundle.ts";
import { problem, sharedSchemas } from "./components.ts";
import { addDeliveryRoutes } from "./delivery-routes.ts";
import { addInvokeOperations } from "./invoke-operations.ts";
import { addProtocolRoutes } from "./protocol-routes.ts";
import { addSharedRoutes, readerSecurity } from "./shared-routes.ts";

export interface OpenApiOptions {
  /** `info.title`; default `workflow-edge`. */
  title?: string;
  /** `info.version`; default the bundle hash's first 12 hex digits (changes with every build). */
  version?: string;
  /** Absolute base URL for `servers`; default `/` (the host that serves the document). */
  serverUrl?: string;
}

const HTTP_METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];

/**
 * Every served path answers a method it does not serve with 405 `method_not_allowed` and an
 * `Allow` header listing the ones it does (OPTIONS answers 204 with the same header): said once
 * here for every operation.
 */
function documentMethodNotAllowed(paths: Record<string, JsonObject>): void {
  for (const item of Object.values(paths)) {
    for (const [method, op] of Object.entries(item)) {
      if (!HTTP_METHODS.includes(method) || typeof op !== "object" || op === null) continue;
      const responses = (op as { responses?: Record<string, unknown> }).responses;
      if (!responses || responses["405"]) continue;
      responses["405"] = {
        ...problem("`method_not_allowed`: the path is served, this method is not."),
        headers: {
          Allow: { description: "The methods this path serves.", schema: { type: "string" } },
        },
      };
    }
  }
}

export function buildOpenApi(bundle: Bundle, opts: OpenApiOptions = {}): JsonObject {
  const paths: Record<string, JsonObject> = {};
  const schemas: Record<string, JsonObject | JsonSchema> = sharedSchemas();
  const securitySchemes: Record<string, JsonObject> = {};
  // Run routes accept the credentials of whichever workflow the run belongs to.
  const anyWorkflowSecurity: JsonObject[] = [];

  const names = Object.keys(bundle.invocable).sort();
  const anyPublic = addInvokeOperations(bundle, names, paths, schemas, securitySchemes, anyWorkflowSecurity);
  addSharedRoutes(names, paths, securitySchemes, anyWorkflowSecurity, anyPublic);
  addDeliveryRoutes(names, paths, readerSecurity(anyWorkflowSecurity, anyPublic));
  addProtocolRoutes(bundle, names, paths);

  documentMethodNotAllowed(paths);
  return {
    openapi: "3.1.0",
    info: {
      title: opts.title ?? "workflow-edge",
      version: opts.version ?? bundle.hash.slice(0, 12),
      description:
        "Workflows compiled from workflows/*.workflow.yaml, run at the edge, one Durable Object per run.",
    },
    jsonSchemaDialect: "https://json-schema.org/draft/2020-12/schema",
    servers: [{ url: opts.serverUrl ?? "/" }],
    tags: [
      { name: "workflows", description: "One operation per invocable workflow." },
      { name: "runs", description: "Runs, with the credentials of the run's workflow." },
      {
        name: "deliveries",
        description: "Notifications and approval requests the Worker sends, and their replay.",
      },
      {
        name: "protocols",
        description: "Workflows served as models (OpenAI-compatible), MCP tools and A2A agents.",
      },
      { name: "operations" },
    ],
    paths,
    components: { schemas, securitySchemes },
  } as JsonObject;
}
