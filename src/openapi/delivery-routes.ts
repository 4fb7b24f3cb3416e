/**
 * The delivery routes (docs/http-api.md, "Deliveries"): a workflow's deliveries page by page, one
 * more attempt of one, a recover of the failed ones, and a run's own with their attempts. Read and
 * replayed with the credentials of the workflow they belong to.
 */
import type { JsonObject } from "../bundle.ts";
import { json, problem, ref } from "./components.ts";
import { cursorParam, LIMIT, RUN_ID, workflowQuery } from "./shared-routes.ts";

export function addDeliveryRoutes(
  names: string[],
  paths: Record<string, JsonObject>,
  security: JsonObject[],
): void {
  const common = {
    "401": problem("`unauthorized`."),
    "500": problem("`server_misconfigured` or `internal_error`."),
  };
  paths["/deliveries"] = {
    get: {
      operationId: "listDeliveries",
      summary: "A workflow's deliveries (notifications, approval requests), page by page",
      tags: ["deliveries"],
      security,
      parameters: [
        workflowQuery(names),
        { name: "state", in: "query", required: false, schema: { enum: ["pending", "delivered", "failed"] } },
        LIMIT,
        cursorParam("`next_cursor` of the previous page (same workflow and state filter)."),
      ],
      responses: {
        "200": json("One page of the workflow's deliveries.", ref("DeliveryList")),
        "400": problem("`invalid_query`: a bad limit, state or cursor, or no workflow."),
        "404": problem("`workflow_not_found`."),
        ...common,
      },
    },
  };
  paths["/deliveries/{delivery_id}/retry"] = {
    post: {
      operationId: "retryDelivery",
      summary: "One more attempt of a delivery, now, whatever its state",
      tags: ["deliveries"],
      security,
      parameters: [
        {
          name: "delivery_id",
          in: "path",
          required: true,
          description: "The delivery's id (its webhook-id, `msg_<run_id>_…`).",
          schema: { type: "string" },
        },
      ],
      responses: {
        "202": json("The attempt is on its way.", ref("DeliveryRetried")),
        "404": problem("`delivery_not_found`."),
        ...common,
      },
    },
  };
  paths["/deliveries/recover"] = {
    post: {
      operationId: "recoverDeliveries",
      summary: "Every failed delivery of a workflow created since a time, attempted once more",
      tags: ["deliveries"],
      security,
      parameters: [
        workflowQuery(names),
        {
          name: "since",
          in: "query",
          required: true,
          description: "An RFC 3339 date-time: deliveries created at or after it.",
          schema: { type: "string", format: "date-time" },
        },
      ],
      responses: {
        "200": json("How many failed deliveries were attempted again.", ref("DeliveriesRecovered")),
        "400": problem("`invalid_query`: a bad or missing since, or no workflow."),
        "404": problem("`workflow_not_found`."),
        ...common,
      },
    },
  };
  paths["/runs/{run_id}/deliveries"] = {
    get: {
      operationId: "getRunDeliveries",
      summary: "A run's deliveries with their attempts",
      tags: ["runs"],
      security,
      parameters: [RUN_ID],
      responses: {
        "200": json("The run's deliveries.", ref("RunDeliveries")),
        "404": problem("`run_not_found`."),
        ...common,
      },
    },
  };
}
