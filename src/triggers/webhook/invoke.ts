/**
 * The webhook trigger (docs/triggers.md): `POST /invoke/{name}` turned into one start request for
 * the run layer, and the run layer's answer turned into the invoke's HTTP answer. The pipeline, in
 * this order: the caller's credentials or the sender's signature (on the raw bytes), the body by
 * its content type, the declared request headers, `params.schema` and the secrets' configuration,
 * the Idempotency-Key (or the sender's delivery id), the rate limit; only then does a run exist.
 */
import { type Bundle, type CompiledWorkflow, isSignature } from "../../bundle.ts";
import { HttpProblem } from "../../common/problem.ts";
import { runStub } from "../../run/run-rpc.ts";
import type { StartOptions, StartOutcome } from "../../run/start/start-run.ts";
import { rateLimited } from "../rate-limit.ts";
import { idempotencyKeyOf, startRequest } from "../start-request.ts";
import { authenticatedBody } from "./auth.ts";
import { decodeParams } from "./body.ts";
import { invokeResponse } from "./response.ts";
import { deliveryId } from "./signature.ts";

const MAX_WAIT_S = 60;

/** The start request of an invoke that passed every check (a refused one throws its problem). */
export async function invokeStart(
  bundle: Bundle,
  wf: CompiledWorkflow,
  req: Request,
  env: Record<string, unknown>,
): Promise<StartOptions> {
  const body = await authenticatedBody(wf.auth, req, env);
  const params = decodeParams(body, req.headers.get("content-type"));
  const idempotencyKey = idempotencyKeyOf(req.headers);
  // A sender's redelivery carries the same delivery id: it reaches the same run.
  const runKey =
    idempotencyKey ?? (wf.auth && isSignature(wf.auth) ? deliveryId(wf.auth, req.headers, params) : null);
  // A requested wait, even `wait=0`, replaces invoke.response's wait_s (docs/triggers.md: it changes how long).
  const waitS = requestedWait(req) ?? wf.invoke.response?.waitS ?? 0;
  return startRequest(bundle, wf, { params, headers: req.headers, url: req.url, runKey, waitS }, env);
}

/** The invoke's answer for what starting its run gave. */
export function invokeAnswer(
  wf: CompiledWorkflow,
  started: StartOptions,
  result: StartOutcome,
  env: Record<string, unknown>,
): Response {
  if (result.outcome === "rate_limited") throw rateLimited(wf);
  // Burst shaping (docs/triggers.md): a full queue is the only refusal; a skipped invoke is a 2xx.
  if (result.outcome === "queue_full") {
    throw new HttpProblem("queue_full", `${wf.name}'s queue for this key holds 10,000 runs; retry later`, {
      headers: { "retry-after": String(result.retryAfterS) },
    });
  }
  if (result.outcome === "skipped")
    return Response.json({ run_id: result.runId, status: "skipped" }, { status: 202 });
  if (result.outcome === "conflict") {
    throw new HttpProblem(
      "idempotency_conflict",
      "this Idempotency-Key was already used with a different body for this workflow",
    );
  }
  const location = `/runs/${result.runId}`;
  const response = wf.invoke.response;
  if (response && result.envelope) return invokeResponse(wf, response, result.envelope, env);
  // Without a requested wait the answer is 202 even for a run that has already finished (a
  // replayed Idempotency-Key), as docs/http-api.md says: "answers as an invoke of that run would".
  if (result.envelope && started.waitS > 0) {
    return Response.json(result.envelope, {
      status: 200,
      headers: { location, "preference-applied": `wait=${started.waitS}` },
    });
  }
  const queued = result.outcome === "joined" || ("queued" in result && result.queued === true);
  return Response.json(
    { run_id: result.runId, status: queued ? "queued" : "accepted" },
    { status: 202, headers: { location } },
  );
}

/** Whether the caller asked for the run as it goes (`Accept: text/event-stream`, docs/http-api.md, "Streaming"). */
export function wantsStream(req: Request): boolean {
  return /(^|,)\s*text\/event-stream\s*(;|,|$)/i.test(req.headers.get("accept") ?? "");
}

/**
 * The invoke's answer as a stream of the run's events: 200 `text/event-stream` at once, opening
 * with `run.started` (`run.queued`), then the steps' events and a streaming step's `output.delta`
 * as they happen, ending with `run.completed` (the envelope). Null when there is no run to follow
 * (a refusal is answered as usual by invokeAnswer; a skipped invoke made none).
 */
export async function invokeStream(env: Env, result: StartOutcome): Promise<Response | null> {
  if (result.outcome !== "started" && result.outcome !== "existing" && result.outcome !== "joined")
    return null;
  const stub = runStub(env, result.runId);
  if (!stub) return null;
  const res = await stub.fetch(new Request("https://run.internal/events?opening=1"));
  if (!res.ok || !res.body) return null;
  const headers = new Headers(res.headers);
  headers.set("location", `/runs/${result.runId}`);
  return new Response(res.body, { status: 200, headers });
}

/** `Prefer: wait=N` (RFC 7240) or `?wait=N`, capped at 60 s; null when the request asks for none. */
export function requestedWait(req: Request): number | null {
  const fromQuery = new URL(req.url).searchParams.get("wait");
  const prefer = req.headers.get("prefer") ?? "";
  const m = /(?:^|[,;\s])wait\s*=\s*"?(\d+)"?/i.exec(prefer);
  const raw = fromQuery ?? m?.[1] ?? null;
  if (raw === null) return null;
  const n = Number.parseInt(raw, 10);
  return Number.isFinite(n) && n > 0 ? Math.min(n, MAX_WAIT_S) : 0;
}
