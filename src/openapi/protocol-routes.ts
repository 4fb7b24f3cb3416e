/**
 * The protocols' routes in the OpenAPI document (docs/protocols.md, docs/a2a.md): the
 * OpenAI-compatible endpoint with the models it serves, the MCP server with its tools, the A2A agents. Each is described only when a workflow
 * declares it, with the credentials of those workflows; the protocols' own bodies (Chat Completions,
 * JSON-RPC) are their specifications', named here, not repeated.
 */
import type { Bundle, CompiledWorkflow, JsonObject } from "../bundle.ts";
import { componentName } from "./components.ts";

const OPENAI_ERROR = {
  type: "object",
  required: ["error"],
  properties: {
    error: {
      type: "object",
      required: ["message", "type", "param", "code"],
      properties: {
        message: { type: "string" },
        type: { type: "string" },
        param: { type: ["string", "null"] },
        code: { type: "string", description: "This project's problem code (docs/errors-and-limits.md)." },
      },
    },
  },
};

const openAiError = (description: string) => ({
  description,
  content: { "application/json": { schema: OPENAI_ERROR } },
});

/** The security of the workflows `served`: each one's scheme, and none when one of them is public. */
function securityOf(served: CompiledWorkflow[]): JsonObject[] {
  const out: JsonObject[] = served
    .filter((wf) => wf.auth)
    .map((wf) => ({ [`${componentName(wf.name)}.auth`]: [] }));
  return served.some((wf) => !wf.auth) ? [...out, {}] : out;
}

export function addProtocolRoutes(bundle: Bundle, names: string[], paths: Record<string, JsonObject>): void {
  const workflows = names.flatMap((n) => {
    const key = bundle.invocable[n];
    const wf = key ? bundle.workflows[key] : undefined;
    return wf ? [wf] : [];
  });
  const chat = workflows.filter((wf) => wf.chat);
  const mcp = workflows.filter((wf) => wf.mcp);
  const a2a = workflows.filter((wf) => wf.a2a);
  if (chat.length > 0) {
    const models = chat.map((wf) => wf.name);
    paths["/v1/chat/completions"] = {
      post: {
        operationId: "chatCompletions",
        summary: "A workflow served as a model (OpenAI Chat Completions)",
        description: `Starts a run of the workflow named by \`model\` (one of: ${models.join(", ")}), as \`POST /invoke/{name}\` would, and answers with its reply; \`stream: true\` answers \`chat.completion.chunk\`s. Other request fields are ignored.`,
        tags: ["protocols"],
        security: securityOf(chat),
        parameters: [
          {
            name: "Idempotency-Key",
            in: "header",
            required: false,
            schema: { type: "string", maxLength: 255 },
          },
        ],
        requestBody: {
          required: true,
          content: {
            "application/json": {
              schema: {
                type: "object",
                required: ["model", "messages"],
                properties: {
                  model: { enum: models },
                  messages: { type: "array", items: { type: "object", required: ["role"] } },
                  stream: { type: "boolean" },
                  stream_options: { type: "object", properties: { include_usage: { type: "boolean" } } },
                  user: { type: "string" },
                  metadata: { type: "object" },
                },
              },
            },
          },
        },
        responses: {
          "200": {
            description:
              "A `chat.completion`, or with `stream: true` its chunks. `x-run-id` and `x-request-id` name the run.",
            content: {
              "application/json": { schema: { type: "object" } },
              "text/event-stream": { schema: { type: "string" } },
            },
          },
          "400": openAiError("`invalid_json` or `invalid_request`."),
          "401": openAiError("`unauthorized`."),
          "404": openAiError("`workflow_not_found`: no model of that name."),
          "422": openAiError("`invalid_params`: `param` names the first failing path."),
          "429": openAiError("`rate_limited` or `queue_full`, with `Retry-After`."),
          "500": openAiError(
            "The run failed or was canceled (`code` is its error's; `x-should-retry: false`), or the server failed.",
          ),
        },
      },
    };
    const model = {
      type: "object",
      required: ["id", "object", "created", "owned_by"],
      properties: {
        id: { enum: models },
        object: { const: "model" },
        created: { type: "integer" },
        owned_by: { type: "string" },
      },
    };
    paths["/v1/models"] = {
      get: {
        operationId: "listModels",
        summary: "Every workflow served as a model (names only; no credential needed)",
        tags: ["protocols"],
        security: [{}],
        responses: {
          "200": {
            description: "The models.",
            content: {
              "application/json": {
                schema: {
                  type: "object",
                  properties: { object: { const: "list" }, data: { type: "array", items: model } },
                },
              },
            },
          },
        },
      },
    };
    paths["/v1/models/{model}"] = {
      get: {
        operationId: "getModel",
        summary: "One workflow served as a model",
        tags: ["protocols"],
        security: [{}],
        parameters: [{ name: "model", in: "path", required: true, schema: { type: "string" } }],
        responses: {
          "200": { description: "The model.", content: { "application/json": { schema: model } } },
          "404": openAiError("`workflow_not_found`."),
        },
      },
    };
  }
  if (a2a.length > 0) {
    const agents = a2a.map((wf) => wf.name);
    const name = { name: "name", in: "path", required: true, schema: { enum: agents } };
    paths["/a2a/{name}/.well-known/agent-card.json"] = {
      get: {
        operationId: "a2aAgentCard",
        summary: "A workflow's A2A Agent Card (no credential needed)",
        tags: ["protocols"],
        security: [{}],
        parameters: [name],
        responses: {
          "200": {
            description: "The Agent Card (A2A 1.0).",
            content: { "application/json": { schema: { type: "object" } } },
          },
          "404": { description: "`workflow_not_found`: no A2A agent of that name." },
        },
      },
    };
    paths["/a2a/{name}"] = {
      post: {
        operationId: "a2a",
        summary: "A workflow as an A2A 1.0 agent (JSON-RPC; A2A-Version: 1.0)",
        description: `Agents: ${agents.join(", ")}. SendMessage, SendStreamingMessage, GetTask, ListTasks, CancelTask, SubscribeToTask and the push-config methods; errors in A2A's codes.`,
        tags: ["protocols"],
        security: securityOf(a2a),
        parameters: [name, { name: "A2A-Version", in: "header", required: true, schema: { const: "1.0" } }],
        requestBody: {
          required: true,
          content: { "application/json": { schema: { type: "object", required: ["jsonrpc", "method"] } } },
        },
        responses: {
          "200": {
            description: "A JSON-RPC response; the streaming methods answer SSE of JSON-RPC responses.",
            content: {
              "application/json": { schema: { type: "object" } },
              "text/event-stream": { schema: { type: "string" } },
            },
          },
          "401": { description: "`unauthorized` (problem+json, before any JSON-RPC)." },
          "404": { description: "`workflow_not_found`." },
          "429": { description: "Over the rate limit or a full queue (a JSON-RPC error; `Retry-After`)." },
        },
      },
    };
  }
  if (mcp.length > 0) {
    paths["/mcp"] = {
      post: {
        operationId: "mcp",
        summary: "The MCP server (Streamable HTTP, JSON-RPC 2.0, no session)",
        description: `Tools (one per workflow, listed to the credentials that open them): ${mcp.map((wf) => wf.name).join(", ")}. Revisions 2025-11-25, 2025-06-18, 2025-03-26 and the stateless 2026-07-28; tasks on 2025-11-25.`,
        tags: ["protocols"],
        security: securityOf(mcp),
        requestBody: {
          required: true,
          content: { "application/json": { schema: { type: "object", required: ["jsonrpc", "method"] } } },
        },
        responses: {
          "200": {
            description:
              "A JSON-RPC response; a `tools/call` with a progress token answers SSE (progress notifications, then the response).",
            content: {
              "application/json": { schema: { type: "object" } },
              "text/event-stream": { schema: { type: "string" } },
            },
          },
          "202": { description: "A notification, taken." },
          "400": {
            description: "Not a JSON-RPC request, or an unsupported protocol version (a JSON-RPC error).",
          },
          "401": {
            description:
              "No tool opens to the request's credential and none is public (`WWW-Authenticate: Bearer`).",
          },
          "403": { description: "A browser `Origin` that is not allowed." },
        },
      },
    };
  }
}
