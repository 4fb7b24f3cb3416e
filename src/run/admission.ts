/**
 * Whether an invoke creates its run, and whether the run starts now or waits its turn: the
 * workflow's rate limit (`invoke.rate_limit`, counted only when the invoke creates a run, never
 * for a replay), then its concurrency key (`invoke.concurrency`). Decided before the run starts
 * (its lifecycle takes the verdict), over two ports: the Worker's rate-limit binding and the key's
 * Durable Object, or stand-ins in Node tests (test/run/admission.test.ts).
 */
import type { RateLimitSlot } from "./rate-limit.ts";

export interface AdmissionPorts {
  /** One slot of the limit; true: under it (or the limiter could not answer: it protects capacity, it is no access control). */
  takeRateLimitSlot(slot: RateLimitSlot): Promise<boolean>;
  /** The key's object: does run `runId` start now, or wait behind the runs before it? */
  askTurn(gate: string, runId: string, limit: number): Promise<"start" | "queued">;
}

export interface AdmissionRequest {
  rateLimit?: RateLimitSlot | null;
  concurrency?: { gate: string; limit: number } | null;
}

export type Admission = "rate_limited" | "start" | "queued";

/** The verdict for a new run `runId`. A refused invoke never takes a place in its key. */
export async function admit(req: AdmissionRequest, runId: string, ports: AdmissionPorts): Promise<Admission> {
  if (req.rateLimit && !(await ports.takeRateLimitSlot(req.rateLimit))) return "rate_limited";
  if (req.concurrency) return ports.askTurn(req.concurrency.gate, runId, req.concurrency.limit);
  return "start";
}
