/**
 * `invoke.rate_limit` (SPEC section 5): one call to a Workers Rate Limiting binding per invoke,
 * after auth and params (a refused caller never spends anyone's quota), before the run exists.
 * The key is rendered from `params` and `request` (default: the workflow name). Over the limit:
 * 429 `rate_limited` with `Retry-After` = the binding's period, the longest the caller can have
 * to wait. The binding counts per Cloudflare location and is eventually consistent (by design,
 * it is meant to be fast, not exact); docs/triggers.md, "Rate limits", says how to size it. A limiter that
 * throws lets the invoke through (it protects capacity; it is not an access control).
 */
import type { CompiledWorkflow, JsonObject } from "../../bundle.ts";
import { render, stringify } from "../../engine/substitute.ts";
import { HttpProblem } from "../problem.ts";

interface RateLimitBinding {
  limit(options: { key: string }): Promise<{ success: boolean }>;
}

function isBinding(v: unknown): v is RateLimitBinding {
  return typeof v === "object" && v !== null && typeof (v as RateLimitBinding).limit === "function";
}

export async function enforceRateLimit(
  wf: CompiledWorkflow,
  seen: { params: JsonObject; request: JsonObject },
  env: Record<string, unknown>,
): Promise<void> {
  const rl = wf.invoke.rateLimit;
  if (!rl) return;
  const binding = env[rl.binding];
  if (!isBinding(binding)) {
    throw new HttpProblem(
      "server_misconfigured",
      `the rate limit binding ${rl.binding} is missing (declare it under [[ratelimits]] in wrangler.toml)`,
    );
  }
  let key = wf.name;
  if (rl.key) {
    let rendered = "";
    try {
      rendered = stringify(render(rl.key, { params: seen.params, env: {}, step: {}, request: seen.request }));
    } catch {
      // An expression over these inputs cannot fail at run time short of a bug: fall back below.
    }
    if (rendered !== "") key = rendered;
  }
  let success = true;
  try {
    ({ success } = await binding.limit({ key }));
  } catch {
    // A limiter that cannot answer must not take the workflow down with it: let the invoke in.
    console.error("rate limiter unavailable", rl.binding);
  }
  if (!success) {
    throw new HttpProblem("rate_limited", `too many invokes of ${wf.name}; retry after ${rl.periodS} s`, {
      headers: { "retry-after": String(rl.periodS) },
    });
  }
}
