/**
 * Whether an invoke that names its run (an Idempotency-Key, a sender's delivery id) creates it:
 * the workflow's rate limit (`invoke.rate_limit`), counted only when the invoke creates the run,
 * never for a replay. Decided by the run's object before the run starts (its lifecycle takes the
 * verdict), over the Worker's rate-limit binding, or a stand-in in Node tests
 * (test/run/start/admission.test.ts). Flow keys (concurrency, throttle, debounce, batch) have decided
 * whether it starts or waits before the object is asked (start-run.ts).
 */
import type { RateLimitSlot } from "./rate-limit.ts";

export interface AdmissionPorts {
  /** One slot of the limit; true: under it (or the limiter could not answer: it protects capacity, it is no access control). */
  takeRateLimitSlot(slot: RateLimitSlot): Promise<boolean>;
}

export interface AdmissionRequest {
  rateLimit?: RateLimitSlot | null;
}

export type Admission = "rate_limited" | "start";

/** The verdict for a new run. */
export async function admit(req: AdmissionRequest, ports: AdmissionPorts): Promise<Admission> {
  if (req.rateLimit && !(await ports.takeRateLimitSlot(req.rateLimit))) return "rate_limited";
  return "start";
}
