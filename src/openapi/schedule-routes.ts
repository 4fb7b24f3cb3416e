/**
 * The OpenAPI paths of a workflow's schedule (docs/http-api.md, "Schedules"): the listing, which
 * needs no credentials, and what an operator asks of one entry with the workflow's credentials.
 */
import { type JsonObject, RUN_ID_PATTERN } from "../bundle.ts";
import { json, problem, ref } from "./components.ts";

export function addScheduleRoutes(
  paths: Record<string, JsonObject>,
  names: string[],
  runSecurity: JsonObject[],
): void {
  paths["/workflows/{name}/schedules"] = {
    get: {
      operationId: "listSchedules",
      summary: "A workflow's schedule entries and their next fire times",
      tags: ["operations"],
      security: [{}],
      parameters: [
        { name: "name", in: "path", required: true, schema: { type: "string", enum: names } },
        {
          name: "from",
          in: "query",
          required: false,
          description: "Fire times after this RFC 3339 date-time (default: now).",
          schema: { type: "string", format: "date-time" },
        },
        {
          name: "count",
          in: "query",
          required: false,
          schema: { type: "integer", minimum: 1, maximum: 50, default: 5 },
        },
      ],
      responses: {
        "200": json("Each entry, in file order, with its next `count` fire times in UTC.", ref("Schedules")),
        "400": problem("`invalid_query`: a bad `from` or `count`."),
        "404": problem("`workflow_not_found`."),
      },
    },
  };
  const entryParams: JsonObject[] = [
    { name: "name", in: "path", required: true, schema: { type: "string", enum: names } },
    {
      name: "index",
      in: "path",
      required: true,
      description: "The entry's 0-based index in the workflow's `schedule`.",
      schema: { type: "integer", minimum: 0 },
    },
  ];
  const entryErrors: JsonObject = {
    "401": problem("`unauthorized`."),
    "404": problem("`workflow_not_found`; `schedule_not_found`: the workflow has no entry at that index."),
    "500": problem("`server_misconfigured` or `internal_error`."),
  };
  paths["/workflows/{name}/schedules/{index}/run"] = {
    post: {
      operationId: "runScheduleNow",
      summary: "Start a schedule entry's run now, with its params",
      tags: ["operations"],
      security: runSecurity,
      parameters: entryParams,
      responses: {
        "202": json("The run was created; `request.schedule` is `{index, cron, timezone, manual: true}`.", {
          type: "object",
          required: ["run_id", "status"],
          properties: { run_id: { type: "string", pattern: RUN_ID_PATTERN }, status: { type: "string" } },
        }),
        ...entryErrors,
      },
    },
  };
  for (const [action, paused] of [
    ["pause", true],
    ["resume", false],
  ] as const) {
    paths[`/workflows/{name}/schedules/{index}/${action}`] = {
      post: {
        operationId: `${action}Schedule`,
        summary: paused
          ? "Pause a schedule entry: its firings start nothing until it is resumed (none are made up)"
          : "Resume a paused schedule entry",
        tags: ["operations"],
        security: runSecurity,
        parameters: entryParams,
        responses: {
          "200": json("The entry, and whether it is paused now.", ref("ScheduleEntryState")),
          ...entryErrors,
        },
      },
    };
  }
  paths["/workflows/{name}/schedules/{index}/backfill"] = {
    post: {
      operationId: "backfillSchedule",
      summary: "One run per firing of a schedule entry in [from, to), each firing at most once",
      tags: ["operations"],
      security: runSecurity,
      parameters: [
        ...entryParams,
        { name: "from", in: "query", required: true, schema: { type: "string", format: "date-time" } },
        { name: "to", in: "query", required: true, schema: { type: "string", format: "date-time" } },
      ],
      responses: {
        "200": json("Each firing, its run, and whether this call started it.", ref("Backfill")),
        "400": problem(
          "`invalid_query`: `from` or `to` missing or not a date-time, or not `from` < `to`; `too_many_firings`: more than 100 in the range.",
        ),
        ...entryErrors,
      },
    },
  };
}
