/**
 * `invoke.response` (docs/triggers.md): a workflow answering as an API. Once the run has finished
 * within the wait, a complete run answers the declared status with the body rendered against
 * {params, env, step, request} as the envelope holds them (masked; env only the non-secret
 * vars, which the compiler enforces too); a failed or canceled run answers 500 `run_failed`
 * with its `run_id` and `error`. Senders' handshakes (Slack's url_verification, Discord's PING)
 * are such answers, chosen by a condition on a step.
 */
import type { CompiledResponse, CompiledWorkflow, JsonObject } from "../../bundle.ts";
import { HttpProblem } from "../../common/problem.ts";
import { render, stringify } from "../../engine/substitute.ts";
import type { Envelope } from "../../run/envelope.ts";

const CONTENT_TYPES: Record<CompiledResponse["contentType"], string> = {
  "application/json": "application/json",
  "text/plain": "text/plain; charset=utf-8",
  "text/xml": "text/xml; charset=utf-8",
};

/** The rendered answer for a finished run (`envelope.status` is complete, failed or canceled). */
export function invokeResponse(
  wf: CompiledWorkflow,
  response: CompiledResponse,
  envelope: Envelope,
  env: Record<string, unknown>,
): Response {
  const location = `/runs/${envelope.run_id}`;
  if (envelope.status !== "complete") {
    throw new HttpProblem(
      "run_failed",
      `the run ${envelope.status === "canceled" ? "was canceled" : "failed"}`,
      {
        headers: { location },
        extra: { run_id: envelope.run_id, error: envelope.error },
      },
    );
  }
  const publicEnv: JsonObject = {};
  for (const e of wf.env) {
    const v = env[e.name];
    if (!e.secret) publicEnv[e.name] = typeof v === "string" ? v : null;
  }
  const step: JsonObject = {};
  for (const s of envelope.steps) step[s.id] = s.output;
  let value: ReturnType<typeof render>;
  try {
    value = render(response.body, {
      params: envelope.params,
      env: publicEnv,
      step,
      request: envelope.request,
    });
  } catch {
    throw new HttpProblem(
      "response_failed",
      "the run completed, but invoke.response.body could not be rendered",
      {
        headers: { location },
        extra: { run_id: envelope.run_id },
      },
    );
  }
  const empty = response.body.t === "lit" && response.body.v === null;
  const text = empty
    ? null
    : response.contentType === "application/json"
      ? JSON.stringify(value)
      : stringify(value);
  return new Response(text, {
    status: response.status,
    headers: text === null ? { location } : { location, "content-type": CONTENT_TYPES[response.contentType] },
  });
}
