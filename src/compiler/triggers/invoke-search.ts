/**
 * Compiles `search:` (docs/http-api.md, "Search keys"): what an operator finds a workflow's runs
 * by, besides their id, status and time (`GET /runs?workflow=NAME&search.customer=42`). At most
 * MAX_SEARCH_KEYS keys, each named like a field (`customer`, `order_id`) and a template over
 * `params` and `request` only (what a run has when it starts). Root workflows only.
 */
import type { Template } from "../../bundle.ts";
import { isObject } from "../../common/guards.ts";
import type { InvokeContext, Report, TriggerTemplate } from "./invoke-context.ts";

export const MAX_SEARCH_KEYS = 4;
const KEY = /^[a-z][a-z0-9_]{0,31}$/;

export function compileSearch(
  d: Record<string, unknown>,
  ctx: InvokeContext,
  err: Report,
  template: TriggerTemplate,
): Record<string, Template> {
  const out: Record<string, Template> = {};
  if (!isObject(d.search)) return out;
  if (!ctx.invocable) {
    err(["search"], "`search` is for invocable workflows (a sub-workflow's run is its caller's)", "key");
    return out;
  }
  const keys = Object.keys(d.search);
  if (keys.length > MAX_SEARCH_KEYS) {
    err(
      ["search", keys[MAX_SEARCH_KEYS] as string],
      `\`search\` has ${keys.length} keys; at most ${MAX_SEARCH_KEYS} are kept per run`,
      "key",
    );
  }
  for (const key of keys.slice(0, MAX_SEARCH_KEYS)) {
    if (!KEY.test(key)) {
      err(
        ["search", key],
        `search key \`${key}\` must be lower-case letters, digits and \`_\`, starting with a letter (at most 32)`,
        "key",
      );
      continue;
    }
    const value = d.search[key];
    if (typeof value !== "string") {
      err(
        ["search", key],
        `search key \`${key}\` must be a template string (\`"{{ params.customer_id }}"\`)`,
      );
      continue;
    }
    out[key] = template(value, ["search", key], `\`search.${key}\``, ["params", "request"]);
  }
  return out;
}
