/**
 * The start request of a run a caller asks for over HTTP, shared by every trigger that has one (the
 * webhook's `POST /invoke/{name}`, the protocols' `/v1/chat/completions`, `/mcp` and `/a2a/{name}`:
 * docs/protocols.md): once the trigger has the params, the same checks in the same order, so a run
 * started by any of them is the run an invoke would have started. The declared request headers
 * are recorded, `params.schema` and the secrets' configuration are checked (a refusal of the run
 * layer), then the rate limit: an invoke that names its run (an Idempotency-Key, a sender's
 * delivery id) may be a replay, which the run's object answers from the run that exists and
 * counts against the limit only if it creates the run.
 */
import type { Bundle, CompiledWorkflow, JsonObject } from "../bundle.ts";
import { HttpProblem } from "../common/problem.ts";
import { recordRequest } from "../run/start/run-request.ts";
import { checkRunInputs, type StartOptions } from "../run/start/start-run.ts";
import { enforceRateLimit, rateLimitSlot } from "./rate-limit.ts";

const MAX_IDEMPOTENCY_KEY = 255;

export interface CallerRequest {
  params: JsonObject;
  /** The request's headers: the declared ones are recorded, `traceparent` continues the caller's trace. */
  headers: Headers;
  /** The request's URL: its origin is the run's (approvals' `decide_url`). */
  url: string;
  /** What names the run (an Idempotency-Key, a sender's delivery id), or null. */
  runKey: string | null;
  /** How long the caller waits for the run's end before its answer (seconds; 0: not at all). */
  waitS: number;
}

/** The start request of a caller's run that passed every check (a refused one throws its problem). */
export async function startRequest(
  bundle: Bundle,
  wf: CompiledWorkflow,
  r: CallerRequest,
  env: Record<string, unknown>,
): Promise<StartOptions> {
  const request = recordRequest(wf.invoke.headers, r.headers);
  checkRunInputs(bundle, wf, r.params, env);
  const slot = rateLimitSlot(wf, { params: r.params, request }, env);
  if (r.runKey === null) await enforceRateLimit(slot, wf, env);
  return {
    params: r.params,
    request,
    idempotencyKey: r.runKey,
    rateLimit: r.runKey === null ? null : slot,
    waitS: r.waitS,
    origin: new URL(r.url).origin,
    // The caller's trace, if it sent one (an invalid header is ignored: a new trace).
    traceparent: r.headers.get("traceparent"),
  };
}

/** The request's `Idempotency-Key` (null: none), or 400 `invalid_idempotency_key` when it is empty or too long. */
export function idempotencyKeyOf(headers: Headers): string | null {
  const key = headers.get("idempotency-key");
  if (key !== null && (key.length === 0 || key.length > MAX_IDEMPOTENCY_KEY)) {
    throw new HttpProblem(
      "invalid_idempotency_key",
      `Idempotency-Key must be 1 to ${MAX_IDEMPOTENCY_KEY} characters`,
    );
  }
  return key;
}
