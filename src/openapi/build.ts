/**
 * The OpenAPI 3.1 description of a deployment, derived from its compiled bundle: one concrete
 * `POST /invoke/<name>` operation per invocable workflow (its request body is the workflow's
 * `params.schema`, its security the workflow's `invoke.auth`), plus the run API every workflow
 * shares. A pure function of the bundle, so the build can write it to a file and the Worker can
 * serve the same document computed from the bundle it imports.
 */

import apiShapes from "../../schema/api.schema.json" with { type: "json" };
import {
  type Bundle,
  type CompiledAuth,
  type CompiledWorkflow,
  isSignature,
  type JsonObject,
  type JsonSchema,
  type SignatureAuth,
} from "../bundle.ts";
import { SCHEMES } from "../http/triggers/schemes.ts";

export interface OpenApiOptions {
  /** `info.title`; default `workflow-edge`. */
  title?: string;
  /** `info.version`; default the bundle hash's first 12 hex digits (changes with every build). */
  version?: string;
  /** Absolute base URL for `servers`; default `/` (the host that serves the document). */
  serverUrl?: string;
}

// Every problem an invoke can answer with, by status (SPEC section 4; codes from src/http/problem.ts).
const INVOKE_PROBLEMS: Array<[string, string]> = [
  ["400", "`invalid_json` (the body is not a JSON object) or `invalid_idempotency_key`."],
  ["401", "`unauthorized`: missing or invalid credentials."],
  ["404", "`workflow_not_found`."],
  ["409", "`idempotency_conflict`: the Idempotency-Key was used with a different body."],
  ["413", "`payload_too_large`: the body is over 1 MiB."],
  ["415", "`unsupported_media_type`: the body is neither JSON nor a form."],
  ["422", "`invalid_params`: the body fails the workflow's params.schema; `errors` lists each violation."],
  ["500", "`server_misconfigured` (a secret is unset or too short) or `internal_error`."],
];

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const problem = (description: string) => ({
  description,
  content: { "application/problem+json": { schema: ref("Problem") } },
});
const json = (description: string, schema: JsonObject) => ({
  description,
  content: { "application/json": { schema } },
});

/** Component names allow only `[A-Za-z0-9._-]`. */
function componentName(s: string): string {
  return s.replace(/[^A-Za-z0-9._-]/g, "_");
}

/** `support-triage` -> `invokeSupportTriage`. */
export function operationIdFor(name: string): string {
  const words = name.split(/[^A-Za-z0-9]+/).filter((w) => w.length > 0);
  return `invoke${words.map((w) => w.charAt(0).toUpperCase() + w.slice(1)).join("")}`;
}

function securitySchemeFor(wf: CompiledWorkflow, auth: CompiledAuth): JsonObject {
  if (isSignature(auth)) {
    const [name, meaning] = signatureHeaders(auth)[0] ?? ["", ""];
    return {
      type: "apiKey",
      in: "header",
      name,
      description: `Signed delivery (scheme \`${auth.scheme}\`) for workflow ${wf.name}: ${meaning}, verified on the raw body.`,
    };
  }
  if (auth.scheme === "bearer" && auth.header === "authorization") {
    return { type: "http", scheme: "bearer", description: `Invoke credentials of workflow ${wf.name}.` };
  }
  return {
    type: "apiKey",
    in: "header",
    name: auth.header,
    description:
      auth.scheme === "bearer"
        ? `Invoke credentials of workflow ${wf.name}: the header value is \`Bearer <token>\`.`
        : `Invoke credentials of workflow ${wf.name}: the header value is the secret itself.`,
  };
}

/** The headers a signed delivery carries, signature first. */
function signatureHeaders(auth: SignatureAuth): Array<[string, string]> {
  if (auth.hmac) {
    const what = `${auth.hmac.prefix ? `\`${auth.hmac.prefix}\` + ` : ""}${auth.hmac.encoding} HMAC-${auth.hmac.algorithm.toUpperCase()} of the body`;
    return [[auth.hmac.header, what]];
  }
  return SCHEMES[auth.scheme].headers;
}

/** Header parameters of an invoke: the workflow's declared request headers, the sender's signature headers. */
function invokeHeaderParams(wf: CompiledWorkflow): JsonObject[] {
  const out: JsonObject[] = [];
  const seen = new Set<string>();
  const add = (name: string, description: string) => {
    if (seen.has(name.toLowerCase())) return;
    seen.add(name.toLowerCase());
    out.push({ name, in: "header", required: false, description, schema: { type: "string" } });
  };
  if (wf.auth && isSignature(wf.auth)) {
    // The first is the security scheme itself; the rest (timestamps, delivery ids) are parameters.
    for (const [name, meaning] of signatureHeaders(wf.auth).slice(1))
      add(name, `Sent by the sender: ${meaning}.`);
  }
  for (const h of wf.invoke.headers) {
    add(h.name, `Recorded with the run; expressions read it as \`request.headers.${h.key}\`.`);
  }
  return out;
}

function containsRef(v: unknown): boolean {
  if (Array.isArray(v)) return v.some(containsRef);
  if (v && typeof v === "object") {
    return Object.entries(v).some(([k, x]) => k === "$ref" || containsRef(x));
  }
  return false;
}

/**
 * A params schema moved into components keeps its own `#/...` references working only if it is
 * its own resource, so one that uses `$ref` gets an `$id` (a name, not a URL anyone fetches).
 */
function embeddedSchema(name: string, schema: JsonSchema): JsonSchema {
  if (typeof schema === "boolean" || schema.$id !== undefined || !containsRef(schema)) return schema;
  return { $id: `urn:workflow-edge:params:${name}`, ...schema };
}

const PREFER_WAIT = {
  name: "Prefer",
  in: "header",
  required: false,
  description: "`wait=N` (RFC 7240): wait up to N seconds (max 60) for the run to finish.",
  schema: { type: "string", examples: ["wait=30"] },
};

const LIMIT = {
  name: "limit",
  in: "query",
  required: false,
  schema: { type: "integer", minimum: 1, maximum: 100, default: 20 },
};

function cursorParam(description: string) {
  return { name: "cursor", in: "query", required: false, schema: { type: "string" }, description };
}

/** The `workflow` query of the run list and the bulk re-run: one of the invocable names. */
function workflowQuery(names: string[]) {
  return { name: "workflow", in: "query", required: true, schema: { type: "string", enum: names } };
}

/** A `status` query that filters runs on these statuses. */
function statusQuery(statuses: string[], byDefault?: string): JsonObject {
  const schema: JsonObject = { enum: statuses };
  if (byDefault !== undefined) schema.default = byDefault;
  return { name: "status", in: "query", required: false, schema };
}

const RUN_ID = {
  name: "run_id",
  in: "path",
  required: true,
  description: "The run id returned by the invoke (64 hex digits).",
  schema: { type: "string", pattern: "^[0-9a-f]{64}$" },
};

/**
 * The API's shapes (envelope, step record, problem, approval, run list, …) from their one source,
 * schema/api.schema.json, with references pointed at this document's components.
 */
function sharedSchemas(): Record<string, JsonObject> {
  const text = JSON.stringify(apiShapes.$defs).replaceAll("#/$defs/", "#/components/schemas/");
  return JSON.parse(text) as Record<string, JsonObject>;
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
  let anyPublic = false;

  const names = Object.keys(bundle.invocable).sort();
  for (const name of names) {
    const key = bundle.invocable[name];
    const wf = key ? bundle.workflows[key] : undefined;
    if (!wf) continue;
    const paramsName = `${componentName(name)}.params`;
    schemas[paramsName] = embeddedSchema(name, wf.paramsSchema);
    let security: JsonObject[];
    if (wf.auth) {
      const scheme = `${componentName(name)}.auth`;
      securitySchemes[scheme] = securitySchemeFor(wf, wf.auth);
      security = [{ [scheme]: [] }];
      if (!isSignature(wf.auth)) {
        anyWorkflowSecurity.push({ [scheme]: [] });
      } else if (wf.auth.scheme !== "discord") {
        // Runs of a signed workflow are read with `Authorization: Bearer <one of its secrets>`.
        const reader = `${componentName(name)}.read`;
        securitySchemes[reader] = {
          type: "http",
          scheme: "bearer",
          description: `Reading runs of workflow ${name}: the token is one of its signing secrets.`,
        };
        anyWorkflowSecurity.push({ [reader]: [] });
      }
    } else {
      security = [{}];
      anyPublic = true;
    }
    const answer = wf.invoke.response;
    const responses: JsonObject = {
      ...(answer
        ? {
            [String(answer.status)]: {
              description: `The run completed within the wait (\`Prefer: wait=N\`, else ${answer.waitS} s): the workflow's \`invoke.response\`, rendered.`,
              headers: { Location: { schema: { type: "string" }, description: "`/runs/{run_id}`" } },
              ...(answer.body.t === "lit" && answer.body.v === null
                ? {}
                : {
                    content: {
                      [answer.contentType]: {
                        schema: answer.contentType === "application/json" ? {} : { type: "string" },
                      },
                    },
                  }),
            },
          }
        : {
            "200": {
              description: "The run finished within the requested wait: its envelope.",
              headers: {
                Location: { schema: { type: "string" }, description: "`/runs/{run_id}`" },
                "Preference-Applied": { schema: { type: "string" }, description: "`wait=N`" },
              },
              content: { "application/json": { schema: ref("Envelope") } },
            },
          }),
      "202": {
        description: "The run was created (or, with the same Idempotency-Key and body, already exists).",
        headers: { Location: { schema: { type: "string" }, description: "`/runs/{run_id}`" } },
        content: { "application/json": { schema: ref("RunAccepted") } },
      },
    };
    for (const [status, text] of INVOKE_PROBLEMS) {
      if (status === "401" && !wf.auth) continue;
      responses[status] ??= problem(text);
    }
    if (wf.invoke.rateLimit) {
      responses["429"] = {
        ...problem("`rate_limited`: over the workflow's rate limit; no run was created."),
        headers: { "Retry-After": { schema: { type: "integer" }, description: "Seconds to wait." } },
      };
    }
    if (answer) {
      responses["500"] = problem(
        "`run_failed` (the run failed or was canceled within the wait; `run_id` and `error` say how), `response_failed`, `server_misconfigured` or `internal_error`.",
      );
    }
    const description = [
      wf.description ?? "",
      wf.version ? `Version ${wf.version}.` : "",
      `Whole-run deadline ${wf.policy.timeoutS} s.`,
      wf.policy.costBudgetUsd !== null ? `Cost budget ${wf.policy.costBudgetUsd} USD per run.` : "",
      wf.auth ? "" : "Public: no credentials required.",
    ]
      .filter((s) => s !== "")
      .join(" ");
    paths[`/invoke/${name}`] = {
      post: {
        operationId: operationIdFor(name),
        summary: `Run workflow ${name}`,
        description,
        tags: ["workflows"],
        security,
        parameters: [
          PREFER_WAIT,
          {
            name: "wait",
            in: "query",
            required: false,
            description: "Same as `Prefer: wait=N`.",
            schema: { type: "integer", minimum: 0 },
          },
          {
            name: "Idempotency-Key",
            in: "header",
            required: false,
            description:
              "Scoped to this workflow: the same key with an equal body answers with the same run; with a different body, 409.",
            schema: { type: "string", minLength: 1, maxLength: 255 },
          },
          ...invokeHeaderParams(wf),
        ],
        requestBody: {
          required: false,
          description:
            "The workflow's params (an empty body is `{}`); at most 1 MiB. A form becomes an object of strings (a repeated field: an array); a form whose only field is `payload` holding a JSON object is that object.",
          content: {
            "application/json": { schema: ref(paramsName) },
            "application/x-www-form-urlencoded": { schema: { type: "object" } },
          },
        },
        responses,
      },
    };
  }

  // `Authorization: Bearer <ADMIN_TOKEN>` reads the runs of every workflow.
  securitySchemes.admin = {
    type: "http",
    scheme: "bearer",
    description: "The Worker's ADMIN_TOKEN secret (when set): reads the runs of every workflow.",
  };
  const runSecurity = [...anyWorkflowSecurity, { admin: [] }, ...(anyPublic ? [{}] : [])];
  const runProblems = {
    "401": problem("`unauthorized`: the run's workflow needs credentials."),
    "404": problem("`run_not_found`."),
    "500": problem("`server_misconfigured` or `internal_error`."),
  };
  const runOp = (operationId: string, summary: string, responses: JsonObject): JsonObject => ({
    operationId,
    summary,
    tags: ["runs"],
    security: runSecurity,
    parameters: [RUN_ID],
    responses: { ...responses, ...runProblems },
  });
  const envelope = json("The run envelope.", ref("Envelope"));

  paths["/runs/{run_id}"] = {
    get: runOp("getRun", "The run envelope", { "200": envelope }),
    delete: runOp("deleteRun", "Delete a finished run's record", {
      "204": { description: "Deleted." },
      "409": problem("`run_active`: cancel the run first."),
    }),
  };
  paths["/runs/{run_id}/envelope"] = {
    get: runOp("getRunEnvelope", "The run envelope (ktsu-compatible alias)", { "200": envelope }),
  };
  paths["/runs/{run_id}/events"] = {
    get: runOp("streamRunEvents", "Run events as Server-Sent Events", {
      "200": {
        description:
          "History first, then live events until the run ends. Event types: step.started, step.completed, step.skipped, step.failed, step.canceled, step.pending_approval, step.waiting, approval.requested, approval.decided (data: `{approval}`), run.completed; each `data:` is one JSON object.",
        content: { "text/event-stream": { schema: { type: "string" } } },
      },
    }),
  };
  paths["/runs/{run_id}/graph"] = {
    get: runOp("getRunGraph", "The dependency graph of the run's definition", {
      "200": json("Nodes are steps (slash paths), edges their dependencies.", ref("RunGraph")),
    }),
  };
  paths["/runs/{run_id}/cancel"] = {
    post: runOp("cancelRun", "Cancel an active run", {
      "202": json("The run is canceled: its envelope.", ref("Envelope")),
      "409": problem("`run_not_active`: the run has already finished."),
    }),
  };
  paths["/runs/{run_id}/rerun"] = {
    post: {
      ...runOp("rerunRun", "Re-run a finished run as a new run, reusing what completed", {
        "200": json("With `Prefer: wait=N`: the new run's envelope once it has finished.", ref("Envelope")),
        "202": json("The re-run was accepted (`Location: /runs/{new run_id}`).", ref("RerunAccepted")),
        "400": problem("`unknown_step`: `from` names no step; `invalid_rerun`: a bad body."),
        "409": problem(
          "`run_active`: the run has not finished; `nothing_to_rerun`: a complete run without `from`.",
        ),
        "422": problem("`invalid_params`: `params` fail the workflow's params.schema."),
      }),
      parameters: [RUN_ID, PREFER_WAIT],
      requestBody: { required: false, content: { "application/json": { schema: ref("RerunRequest") } } },
    },
  };
  paths["/runs/rerun"] = {
    post: {
      operationId: "rerunRuns",
      summary: "Re-run a workflow's failed (or canceled) runs, each once, newest first",
      tags: ["runs"],
      security: runSecurity,
      parameters: [
        workflowQuery(names),
        statusQuery(["failed", "canceled"], "failed"),
        {
          name: "since",
          in: "query",
          required: false,
          schema: { type: "string", format: "date-time" },
          description: "Only runs created at or after this time.",
        },
        LIMIT,
        cursorParam("`next_cursor` of the previous call: the next page of listed runs."),
        {
          name: "definition",
          in: "query",
          required: false,
          schema: { enum: ["pinned", "current"], default: "pinned" },
        },
      ],
      responses: {
        "200": json(
          "The re-runs started (a run already re-run is skipped); `next_cursor` continues the listing.",
          ref("RerunList"),
        ),
        "400": problem("`invalid_query`: a bad status, since, limit or cursor, or no workflow."),
        "401": problem("`unauthorized`."),
        "404": problem("`workflow_not_found`."),
        "500": problem("`server_misconfigured` or `internal_error`."),
      },
    },
  };
  paths["/runs/{run_id}/signals/{name}"] = {
    post: {
      ...runOp("signalRun", "Send a signal to the run's wait step", {
        "200": json("Delivered to the wait step at `step`.", ref("SignalDelivered")),
        "202": json(
          "No wait for it yet: kept (one per name) for the wait the run reaches next.",
          ref("SignalDelivered"),
        ),
        "409": problem(
          "`signal_pending`: a signal of that name is already kept; `run_not_active`: the run has finished.",
        ),
        "422": problem("`invalid_signal`: the body fails the wait's `schema` (the step keeps waiting)."),
      }),
      parameters: [
        RUN_ID,
        {
          name: "name",
          in: "path",
          required: true,
          schema: { type: "string", pattern: "^[a-z0-9_-]{1,64}$" },
        },
      ],
      requestBody: {
        required: false,
        description:
          "A JSON object (or a form), at most 1 MiB; empty is `{}`. It becomes the wait step's output.",
        content: {
          "application/json": { schema: { type: "object" } },
          "application/x-www-form-urlencoded": { schema: { type: "object" } },
        },
      },
    },
  };
  const decisionBody = {
    required: true,
    content: { "application/json": { schema: ref("Decision") } },
  };
  const decideOp = (operationId: string, summary: string): JsonObject => {
    const op = runOp(operationId, summary, {
      "200": json("The decided approval.", ref("Approval")),
      "400": problem("`invalid_decision`."),
      "409": problem("`approval_already_decided`."),
    });
    return {
      ...op,
      requestBody: decisionBody,
      responses: {
        ...(op.responses as JsonObject),
        "404": problem(
          "`run_not_found`, or `approval_not_found` (no such approval / no approval of that step).",
        ),
      },
    };
  };
  paths["/runs/{run_id}/approvals"] = {
    get: runOp("listApprovals", "Every approval of the run (pending and decided)", {
      "200": json("The run's approvals, oldest first.", ref("ApprovalList")),
    }),
  };
  paths["/runs/{run_id}/approvals/{approval_id}"] = {
    post: {
      ...decideOp("decideApproval", "Approve or reject a pending approval"),
      parameters: [RUN_ID, { name: "approval_id", in: "path", required: true, schema: { type: "string" } }],
    },
  };
  paths["/runs/{run_id}/steps/{step}/approval/decide"] = {
    post: {
      ...decideOp("decideStepApproval", "Decide a step's oldest pending approval (ktsu-compatible)"),
      parameters: [
        RUN_ID,
        {
          name: "step",
          in: "path",
          required: true,
          description: "The step's slash path (`notify/post`; `/` may be sent as is or as %2F).",
          schema: { type: "string" },
        },
      ],
    },
  };
  paths["/runs"] = {
    get: {
      operationId: "listRuns",
      summary: "A workflow's runs, newest first, page by page",
      tags: ["runs"],
      security: runSecurity,
      parameters: [
        workflowQuery(names),
        statusQuery(["queued", "pending", "running", "complete", "failed", "canceled"]),
        LIMIT,
        cursorParam("`next_cursor` of the previous page (same workflow and status filter)."),
      ],
      responses: {
        "200": json("One page of the workflow's runs.", ref("RunList")),
        "400": problem("`invalid_query`: a bad limit, status or cursor, or no workflow."),
        "401": problem("`unauthorized`."),
        "404": problem("`workflow_not_found`."),
        "500": problem("`server_misconfigured` (a secret is unset or too short) or `internal_error`."),
      },
    },
  };
  paths["/"] = {
    get: {
      operationId: "frontPage",
      summary: "Every invocable workflow: JSON to Accept: application/json, else an HTML page",
      tags: ["operations"],
      security: [{}],
      responses: {
        "200": {
          description: "The deployment's workflows, their trigger and links to their runs.",
          content: {
            "application/json": { schema: ref("FrontPage") },
            "text/html": { schema: { type: "string" } },
          },
        },
      },
    },
  };
  paths["/health"] = {
    get: {
      operationId: "health",
      summary: "Liveness",
      tags: ["operations"],
      security: [{}],
      responses: {
        "200": json("The Worker is up.", {
          type: "object",
          required: ["status"],
          properties: { status: { const: "ok" } },
        }),
      },
    },
  };

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
      { name: "operations" },
    ],
    paths,
    components: { schemas, securitySchemes },
  } as JsonObject;
}
