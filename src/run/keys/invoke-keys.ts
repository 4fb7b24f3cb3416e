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
