/**
 * The key an invoke is counted under (`invoke.rate_limit.key`, `invoke.concurrency.key`):
 * rendered from the invoke's own params and request (docs/triggers.md). The run layer owns it:
 * the keys' Durable Objects are named by it.
 */
import type { JsonObject, Template } from "../../bundle.ts";
import { render, stringify } from "../../engine/substitute.ts";

/**
 * A key an invoke is counted under (`invoke.rate_limit.key`, `invoke.concurrency.key`), rendered
 * from its params and request; "" when it renders to nothing (each caller has its fallback).
 */
export function renderInvokeKey(key: Template, seen: { params: JsonObject; request: JsonObject }): string {
  try {
    return stringify(render(key, { params: seen.params, env: {}, step: {}, request: seen.request }));
  } catch {
    // An expression over these inputs cannot fail at run time short of a bug: the caller's fallback.
    return "";
  }
}

/** A search value is cut to this many characters (docs/http-api.md, "Search keys"). */
export const MAX_SEARCH_VALUE = 64;

/**
 * The run's search values (`search:` of its workflow): each template rendered over what the run
 * starts with, masked (a secret read by a template is never listed), cut to MAX_SEARCH_VALUE
 * characters; undefined when the workflow declares none.
 */
export function searchValues(
  search: Record<string, Template> | undefined,
  seen: { params: JsonObject; request: JsonObject },
  mask: (text: string) => string,
): Record<string, string> | undefined {
  if (!search) return undefined;
  const out: Record<string, string> = {};
  for (const [key, t] of Object.entries(search))
    out[key] = [...mask(renderInvokeKey(t, seen))].slice(0, MAX_SEARCH_VALUE).join("");
  return out;
}
