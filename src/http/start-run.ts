/**
 * Creating a run, shared by every trigger (an invoke, a cron schedule): the run's Durable Object
 * is a fresh unique one, or, with an idempotency key, the one named by workflow + key, so a
 * replay (a client's retry, a sender's redelivery, the same scheduled time twice) reaches the
 * run that exists instead of making a second one.
 */
import type { CompiledWorkflow, Json, JsonObject } from "../bundle.ts";
import type { RateLimitSlot } from "../run/rate-limit.ts";
import type { RunRpc, StartResult } from "../run/run-rpc.ts";

export interface StartOptions {
  params: JsonObject;
  request: JsonObject;
  idempotencyKey: string | null;
  /** How long to wait for the run to finish before answering (0: not at all). */
  waitS: number;
  /** Origin of the request that starts the run (approvals' `decide_url`); absent for schedules. */
  origin?: string | null;
  /** The limit the run's object counts a new run against (an invoke that may be a replay). */
  rateLimit?: RateLimitSlot | null;
}

export async function startRun(
  env: Env,
  workflowKey: string,
  wf: CompiledWorkflow,
  o: StartOptions,
): Promise<StartResult> {
  const ns = env.RUNS;
  const id = o.idempotencyKey === null ? ns.newUniqueId() : ns.idFromName(`${wf.name}\n${o.idempotencyKey}`);
  const stub = ns.get(id) as unknown as RunRpc;
  return stub.start({
    workflowKey,
    params: o.params,
    request: o.request,
    bodyHash: o.idempotencyKey === null ? null : await canonicalHash(o.params),
    idempotencyKey: o.idempotencyKey,
    waitMs: o.waitS * 1000,
    origin: o.origin ?? null,
    rateLimit: o.rateLimit ?? null,
  });
}

/** Canonical JSON (sorted keys) so that equal bodies hash equal whatever their key order. */
function canonical(v: Json): string {
  if (v === null || typeof v !== "object") return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map(canonical).join(",")}]`;
  const keys = Object.keys(v).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonical((v as JsonObject)[k] ?? null)}`).join(",")}}`;
}

async function canonicalHash(v: Json): Promise<string> {
  const d = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(canonical(v)));
  return [...new Uint8Array(d)].map((b) => b.toString(16).padStart(2, "0")).join("");
}
