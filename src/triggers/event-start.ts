/**
 * What the triggers without a caller share (a queue message, an email; docs/triggers.md): a run
 * started from an event with params and a request, named by the event's own id so that a
 * redelivery reaches the run that exists, checked as an invoke is (params.schema and the secrets:
 * a `RunRefusal`; a rate limit binding missing: an `HttpProblem`), counted against the workflow's
 * rate limit by its object only if it creates the run, answered at once (no wait), and with the
 * Worker's public origin for its absolute URLs.
 */
import workflowBundle from "workflow-bundle";
import type { Bundle, CompiledWorkflow, JsonObject } from "../bundle.ts";
import { checkRunInputs, type StartOutcome, startRun } from "../run/start/start-run.ts";
import { publicOrigin } from "./public-origin.ts";
import { rateLimitSlot } from "./rate-limit.ts";

const bundle: Bundle = workflowBundle;

export interface EventStart {
  /** The workflow's key in the bundle and its compiled form. */
  key: string;
  wf: CompiledWorkflow;
  params: JsonObject;
  request: JsonObject;
  /** `queue:<queue>:<message id>`, `email:<Message-ID>`. */
  idempotencyKey: string;
}

export async function startFromEvent(env: Env, e: EventStart): Promise<StartOutcome> {
  const vars = env as unknown as Record<string, unknown>;
  checkRunInputs(bundle, e.wf, e.params, vars);
  return startRun(env, e.key, e.wf, {
    params: e.params,
    request: e.request,
    idempotencyKey: e.idempotencyKey,
    waitS: 0,
    origin: publicOrigin(env),
    rateLimit: rateLimitSlot(e.wf, { params: e.params, request: e.request }, vars),
  });
}

/** The invocable workflow `pick` chooses, with its bundle key (the build allows at most one). */
export function invocableWorkflow(
  pick: (wf: CompiledWorkflow) => boolean,
): { key: string; wf: CompiledWorkflow } | null {
  for (const key of Object.values(bundle.invocable)) {
    const wf = bundle.workflows[key];
    if (wf && pick(wf)) return { key, wf };
  }
  return null;
}
