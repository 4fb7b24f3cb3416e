/**
 * Errors on `/v1/*` in OpenAI's shape (docs/protocols.md, "Errors"): `{"error": {message, type,
 * param, code}}` with this project's stable code in `code`, the type OpenAI's clients map to their
 * error classes, and the status every other route would answer. A failed or canceled run is a 500
 * that says `x-should-retry: false`: the official clients retry 5xx, and a finished run must not
 * become three runs.
 */
import { HttpProblem } from "../../common/problem.ts";
import { RunRefusal } from "../../run/refusal.ts";

export type OpenAiErrorType =
  | "invalid_request_error"
  | "authentication_error"
  | "permission_error"
  | "not_found_error"
  | "rate_limit_error"
  | "server_error";

function typeOf(status: number): OpenAiErrorType {
  if (status === 401) return "authentication_error";
  if (status === 403) return "permission_error";
  if (status === 404) return "not_found_error";
  if (status === 429) return "rate_limit_error";
  return status >= 500 ? "server_error" : "invalid_request_error";
}

export function openAiError(
  status: number,
  code: string,
  message: string,
  opts: { param?: string | null; headers?: Record<string, string> } = {},
): Response {
  return Response.json(
    { error: { message, type: typeOf(status), param: opts.param ?? null, code } },
    { status, headers: opts.headers ?? {} },
  );
}

/**
 * The answer to anything thrown while a chat request was handled: a problem of this project in
 * OpenAI's shape (its headers kept: `Retry-After`, `WWW-Authenticate`); anything else an internal
 * error that says nothing of what failed.
 */
export function openAiErrorOf(e: unknown): Response {
  const problem = e instanceof RunRefusal ? HttpProblem.from(e) : e instanceof HttpProblem ? e : null;
  if (!problem) {
    console.error("unhandled error", e instanceof Error ? e.name : typeof e);
    return openAiError(500, "internal_error", "the server failed to handle this request");
  }
  const first = problem.errors?.[0];
  const message = first ? `${problem.message}: ${first.path || "/"}: ${first.message}` : problem.message;
  return openAiError(problem.status, problem.code, message, {
    param: first ? first.path : null,
    headers: problem.headers,
  });
}

/** 500 for a run that failed or was canceled: never retried by the client, and it names the run. */
export function runFailed(
  runId: string,
  error: { code: string; message: string } | null,
  status: string,
): Response {
  return openAiError(
    500,
    error?.code ?? status,
    error?.message ?? `the run ${status === "canceled" ? "was canceled" : "failed"}`,
    {
      headers: { "x-should-retry": "false", "x-run-id": runId, "x-request-id": runId },
    },
  );
}
