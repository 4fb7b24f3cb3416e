/**
 * One call to a Workers Rate Limiting binding (`invoke.rate_limit`, docs/triggers.md). The Worker makes
 * it before a new run exists; for an invoke that names its run (an Idempotency-Key, a sender's
 * delivery id) the run's object makes it, and only when it creates the run: a replay is answered
 * by the run that exists and never spends, nor is refused by, the limit. A limiter that throws
 * lets the invoke in: it protects capacity; it is not an access control.
 */
import type { RateLimitSlot } from "../run-calls.ts";

export type { RateLimitSlot };

interface RateLimitBinding {
  limit(options: { key: string }): Promise<{ success: boolean }>;
}

export function isRateLimitBinding(v: unknown): v is RateLimitBinding {
  return typeof v === "object" && v !== null && typeof (v as RateLimitBinding).limit === "function";
}

/** True when the invoke may go on (under the limit, or the limiter could not answer). */
export async function takeRateLimitSlot(slot: RateLimitSlot, env: Record<string, unknown>): Promise<boolean> {
  const binding = env[slot.binding];
  if (!isRateLimitBinding(binding)) return true; // the Worker checked the binding exists
  try {
    return (await binding.limit({ key: slot.key })).success;
  } catch {
    console.error("rate limiter unavailable", slot.binding);
    return true;
  }
}
