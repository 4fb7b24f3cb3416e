/**
 * The push-config methods of an A2A agent (docs/a2a.md, "Push notifications"):
 * `CreateTaskPushNotificationConfig` (also `configuration.taskPushNotificationConfig` on
 * `SendMessage`), `Get…`, `List…` (`ListTaskPushNotificationConfigs`), `Delete…`. A config's URL
 * follows the outbound rules every webhook does (https; no private address unless
 * `ALLOW_PRIVATE_WEBHOOKS=true`); at most 5 per task. A config read back shows its token and
 * credentials as `***`: they are the caller's secrets, kept only to be sent.
 */
import type { Json, JsonObject } from "../../bundle.ts";
import { isObject } from "../../common/guards.ts";
import { checkOutboundUrl } from "../../engine/net.ts";
import type { PushConfig } from "../../run/run-doc.ts";
import { runStub } from "../../run/run-rpc.ts";
import { type A2aContext, taskRun } from "./a2a-context.ts";
import { a2aError, badRequest } from "./a2a-errors.ts";

const CONFIG_ID = /^[A-Za-z0-9._:-]{1,64}$/;

function allowPrivate(ctx: A2aContext): boolean {
  return (ctx.env as unknown as Record<string, unknown>).ALLOW_PRIVATE_WEBHOOKS === "true";
}

/** A config as sent, checked; -32602 naming what is wrong. */
function readConfig(raw: JsonObject, field: string, ctx: A2aContext): PushConfig {
  const violations: Array<{ field: string; description: string }> = [];
  const url = typeof raw.url === "string" ? checkOutboundUrl(raw.url, allowPrivate(ctx)) : null;
  if (!(url instanceof URL))
    violations.push({ field: `${field}.url`, description: "an https URL that is not a private address" });
  const id = raw.id === undefined || raw.id === "" ? crypto.randomUUID() : raw.id;
  if (typeof id !== "string" || !CONFIG_ID.test(id))
    violations.push({ field: `${field}.id`, description: "1 to 64 of A-Z, a-z, 0-9, '.', '_', ':', '-'" });
  const auth = isObject(raw.authentication) ? raw.authentication : null;
  if (raw.authentication !== undefined && (!auth || typeof auth.scheme !== "string"))
    violations.push({ field: `${field}.authentication.scheme`, description: "a string (e.g. Bearer)" });
  if (raw.token !== undefined && typeof raw.token !== "string")
    violations.push({ field: `${field}.token`, description: "a string" });
  if (violations.length > 0) throw badRequest("the push config is not one this agent can keep", violations);
  return {
    id: id as string,
    url: (url as URL).href,
    token: typeof raw.token === "string" ? raw.token : null,
    authentication: auth
      ? {
          scheme: auth.scheme as string,
          credentials: typeof auth.credentials === "string" ? auth.credentials : null,
        }
      : null,
    created_at: new Date().toISOString(),
  };
}

/** A config as the protocol shows it, the caller's secrets as `***`. */
function shown(c: PushConfig, taskId: string): JsonObject {
  return {
    id: c.id,
    taskId,
    url: c.url,
    ...(c.token ? { token: "***" } : {}),
    ...(c.authentication
      ? {
          authentication: {
            scheme: c.authentication.scheme,
            ...(c.authentication.credentials ? { credentials: "***" } : {}),
          },
        }
      : {}),
  };
}

/** `configuration.taskPushNotificationConfig` of a `SendMessage` that started a task. */
export async function pushOnStart(runId: string, raw: JsonObject, ctx: A2aContext): Promise<void> {
  const config = readConfig(raw, "configuration.taskPushNotificationConfig", ctx);
  await runStub(ctx.env, runId)?.pushConfigs({ op: "create", config });
}

export async function pushMethod(method: string, p: JsonObject, ctx: A2aContext): Promise<Json> {
  const taskId = p.taskId;
  const { view } = await taskRun(taskId, ctx);
  const runId = view.envelope.run_id;
  const stub = runStub(ctx.env, runId);
  if (!stub) throw a2aError("TASK_NOT_FOUND", "the task is gone", { taskId: runId });
  switch (method) {
    case "CreateTaskPushNotificationConfig": {
      const result = await stub.pushConfigs({ op: "create", config: readConfig(p, "params", ctx) });
      if (result.outcome === "too_many")
        throw badRequest("a task keeps at most 5 push configs", [
          { field: "params", description: "delete one first" },
        ]);
      if (result.outcome === "not_active")
        throw a2aError("UNSUPPORTED_OPERATION", "the task has finished", { taskId: runId });
      if (result.outcome !== "ok" || !result.configs[0])
        throw a2aError("TASK_NOT_FOUND", "the task is gone", { taskId: runId });
      return shown(result.configs[0], runId);
    }
    case "GetTaskPushNotificationConfig": {
      const result = await stub.pushConfigs({ op: "get", id: String(p.id) });
      if (result.outcome !== "ok" || !result.configs[0])
        throw a2aError("TASK_NOT_FOUND", `no push config ${String(p.id)} for this task`, { taskId: runId });
      return shown(result.configs[0], runId);
    }
    case "ListTaskPushNotificationConfigs": {
      const result = await stub.pushConfigs({ op: "list" });
      return {
        configs: result.outcome === "ok" ? result.configs.map((c) => shown(c, runId)) : [],
        nextPageToken: "",
      };
    }
    default: {
      await stub.pushConfigs({ op: "delete", id: String(p.id) });
      return null;
    }
  }
}
