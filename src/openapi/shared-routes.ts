/**
 * Besides one invoke per workflow, every deployment serves the same routes: the run API (read,
 * cancel, re-run, signal, approve, list) and the front page and health check. They are described
 * once here, with the run routes accepting the credentials of whichever workflow a run belongs to.
 */
import { type JsonObject, RUN_ID_PATTERN } from "../bundle.ts";
import { json, problem, ref } from "./components.ts";
import { PREFER_WAIT } from "./invoke-operations.ts";
import { addScheduleRoutes } from "./schedule-routes.ts";

export const LIMIT = {
  name: "limit",
  in: "query",
  required: false,
  schema: { type: "integer", minimum: 1, maximum: 100, default: 20 },
};

export function cursorParam(description: string) {
  return { name: "cursor", in: "query", required: false, schema: { type: "string" }, description };
}

/** The `workflow` query of the run list and the bulk re-run: one of the invocable names. */
export function workflowQuery(names: string[]) {
  return { name: "workflow", in: "query", required: true, schema: { type: "string", enum: names } };
}

/** A `status` query that filters runs on these statuses. */
function statusQuery(statuses: string[], byDefault?: string): JsonObject {
  const schema: JsonObject = { enum: statuses };
  if (byDefault !== undefined) schema.default = byDefault;
  return { name: "status", in: "query", required: false, schema };
}

export const RUN_ID = {
  name: "run_id",
  in: "path",
  required: true,
  description:
    "The run id returned by the invoke: 64 hex digits, after the workflow's jurisdiction and a `-` when it has a `residency` (`eu-…`).",
  schema: { type: "string", pattern: RUN_ID_PATTERN },
};

/** Who may read a workflow's runs: its own credentials, the admin token, none for a public one. */
export function readerSecurity(anyWorkflowSecurity: JsonObject[], anyPublic: boolean): JsonObject[] {
  return [...anyWorkflowSecurity, { admin: [] }, ...(anyPublic ? [{}] : [])];
}

/**
 * Adds the run API, `/` and `/health` to `paths` and the admin scheme to `securitySchemes`; the run
 * routes accept `anyWorkflowSecurity`, the admin token and (when `anyPublic`) no credentials.
 */
export function addSharedRoutes(
  names: string[],
  paths: Record<string, JsonObject>,
  securitySchemes: Record<string, JsonObject>,
  anyWorkflowSecurity: JsonObject[],
  anyPublic: boolean,
): void {
  // `Authorization: Bearer <ADMIN_TOKEN>` reads the runs of every workflow.
  securitySchemes.admin = {
    type: "http",
    scheme: "bearer",
    description: "The Worker's ADMIN_TOKEN secret (when set): reads the runs of every workflow.",
  };
  const runSecurity = readerSecurity(anyWorkflowSecurity, anyPublic);
  const runProblems = {
    "401": problem("`unauthorized`: the run's workflow needs credentials."),
    "404": problem("`run_not_found`."),
    "500": problem("`server_misconfigured` or `internal_error`."),
  };
  /** `op` with the problem answer `status` described as `text` (replacing the shared one). */
  const withProblem = (op: JsonObject, status: string, text: string): JsonObject => ({
    ...op,
    responses: { ...(op.responses as JsonObject), [status]: problem(text) },
  });
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
          "History first, then live events until the run ends. Event types: step.started, step.completed, step.skipped, step.failed, step.canceled, step.pending_approval, step.waiting, step.scored (data: `{step, variant, scores}`), approval.requested, approval.decided (data: `{approval}`), run.completed, then for a failed or canceled run with steps to undo compensation.started, compensation.completed, compensation.failed (data: the compensation's progress), after which the stream closes; each `data:` is one JSON object.",
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
  paths["/runs/{run_id}/compensate"] = {
    post: runOp("compensateRun", "Try every failed compensation of a finished run once more", {
      "202": json("How many failed compensations are tried again.", {
        type: "object",
        required: ["run_id", "retried"],
        additionalProperties: false,
        properties: { run_id: { type: "string" }, retried: { type: "integer", minimum: 1 } },
      }),
      "409": problem(
        "`run_active`: the run has not finished; `nothing_to_compensate`: none of its compensations failed.",
      ),
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
      ...withProblem(
        runOp("signalRun", "Send a signal to the run's wait step", {
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
        "404",
        "`run_not_found`; `unknown_signal`: no wait of the run declares that name (nothing is kept).",
      ),
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
        {
          name: "compensation",
          in: "query",
          required: false,
          description: "`failed`: only the runs whose compensation failed.",
          schema: { enum: ["failed"] },
        },
        LIMIT,
        cursorParam("`next_cursor` of the previous page (same workflow, status and compensation filter)."),
      ],
      responses: {
        "200": json("One page of the workflow's runs.", ref("RunList")),
        "400": problem("`invalid_query`: a bad limit, status, compensation or cursor, or no workflow."),
        "401": problem("`unauthorized`."),
        "404": problem("`workflow_not_found`."),
        "500": problem("`server_misconfigured` (a secret is unset or too short) or `internal_error`."),
      },
    },
  };
  paths["/workflows/{name}/signals/{signal}/{key}"] = {
    post: {
      operationId: "signalByKey",
      summary:
        "Send a signal to every run of the workflow waiting for it with that key (and cancel its cancel_on runs)",
      tags: ["runs"],
      // The workflow's invoke credentials (a signed sender signs the signal like an invoke).
      security: runSecurity,
      parameters: [
        { name: "name", in: "path", required: true, schema: { type: "string", enum: names } },
        {
          name: "signal",
          in: "path",
          required: true,
          schema: { type: "string", pattern: "^[a-z0-9_-]{1,64}$" },
        },
        { name: "key", in: "path", required: true, schema: { type: "string", minLength: 1 } },
      ],
      requestBody: {
        required: false,
        description:
          "A JSON object (or a form), at most 1 MiB; empty is `{}`. It becomes each wait step's output.",
        content: {
          "application/json": { schema: { type: "object" } },
          "application/x-www-form-urlencoded": { schema: { type: "object" } },
        },
      },
      responses: {
        "200": json(
          "Delivered to the runs waiting now (`delivered` of them), and the `cancel_on` runs canceled.",
          {
            type: "object",
            required: ["delivered", "runs"],
            properties: {
              delivered: { type: "integer", minimum: 0 },
              runs: { type: "array", items: { type: "string", pattern: RUN_ID_PATTERN } },
              canceled: { type: "integer", minimum: 0 },
              canceled_runs: { type: "array", items: { type: "string", pattern: RUN_ID_PATTERN } },
            },
          },
        ),
        "202": json("No run waits with that key yet: kept (one per key and name) for the first that does.", {
          type: "object",
          required: ["delivered", "kept"],
          properties: { delivered: { const: 0 }, kept: { const: true } },
        }),
        "401": problem("`unauthorized`."),
        "404": problem(
          "`workflow_not_found`; `unknown_signal`: no wait or `cancel_on` of the workflow names that signal.",
        ),
        "422": problem("`invalid_signal`: the body fails the waiting runs' `schema`."),
        "500": problem("`server_misconfigured` or `internal_error`."),
      },
    },
  };
  addScheduleRoutes(paths, names, runSecurity);
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
}
