/**
 * `invoke.rate_limit` (docs/triggers.md): one call to a Workers Rate Limiting binding per invoke,
 * after auth and params (a refused caller never spends anyone's quota), before the run exists.
 * The key is rendered from `params` and `request` (default: the workflow name). Over the limit:
 * 429 `rate_limited` with `Retry-After` = the binding's period, the longest the caller can have
 * to wait. The binding counts per Cloudflare location and is eventually consistent (by design,
 * it is meant to be fast, not exact); docs/triggers.md, "Rate limits", says how to size it. A limiter that
 * throws lets the invoke through (it protects capacity; it is not an access control).
 */
import type { CompiledWorkflow, JsonObject } from "../bundle.ts";
import { HttpProblem } from "../common/problem.ts";
import { renderInvokeKey } from "../run/keys/invoke-keys.ts";
import { isRateLimitBinding, type RateLimitSlot, takeRateLimitSlot } from "../run/start/rate-limit.ts";

/**
 * The limit this invoke counts against (null: the workflow has none). Throws 500
 * `server_misconfigured` when the binding is missing (fail closed).
 */
export function rateLimitSlot(
  wf: CompiledWorkflow,
  seen: { params: JsonObject; request: JsonObject },
  env: Record<string, unknown>,
): RateLimitSlot | null {
  const rl = wf.invoke.rateLimit;
  if (!rl) return null;
  if (!isRateLimitBinding(env[rl.binding])) {
    throw new HttpProblem(
      "server_misconfigured",
      `the rate limit binding ${rl.binding} is missing (declare it under [[ratelimits]] in wrangler.toml)`,
    );
  }
  const rendered = rl.key ? renderInvokeKey(rl.key, seen) : "";
  return { binding: rl.binding, key: rendered === "" ? wf.name : rendered };
}

/** 429 `rate_limited` with `Retry-After` = the binding's period, the longest a caller can have to wait. */
export function rateLimited(wf: CompiledWorkflow): HttpProblem {
  const periodS = wf.invoke.rateLimit?.periodS ?? 60;
  return new HttpProblem("rate_limited", `too many invokes of ${wf.name}; retry after ${periodS} s`, {
    headers: { "retry-after": String(periodS) },
  });
}

/** Counts a new invoke against the limit, or throws `rateLimited`. */
export async function enforceRateLimit(
  slot: RateLimitSlot | null,
  wf: CompiledWorkflow,
  env: Record<string, unknown>,
) {
  if (slot && !(await takeRateLimitSlot(slot, env))) throw rateLimited(wf);
}
