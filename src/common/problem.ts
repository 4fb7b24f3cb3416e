/**
 * One HTTP error type. Every error response is RFC 9457 application/problem+json with a stable
 * `code`; the mapping from code to status and title lives here and nowhere else (the error table
 * of docs/errors-and-limits.md mirrors it). It sits below the HTTP face and the workflow-test runner,
 * which both answer with it.
 */

export const PROBLEMS = {
  workflow_not_found: [404, "Workflow not found"],
  run_not_found: [404, "Run not found"],
  run_not_kept: [410, "Run not kept"],
  not_found: [404, "Not found"],
  method_not_allowed: [405, "Method not allowed"],
  unauthorized: [401, "Unauthorized"],
  payload_too_large: [413, "Payload too large"],
  unsupported_media_type: [415, "Unsupported media type"],
  invalid_json: [400, "Invalid JSON"],
  invalid_idempotency_key: [400, "Invalid Idempotency-Key"],
  invalid_query: [400, "Invalid query"],
  invalid_params: [422, "Invalid params"],
  invalid_request: [400, "Invalid request"],
  idempotency_conflict: [409, "Idempotency conflict"],
  run_not_active: [409, "Run not active"],
  run_active: [409, "Run still active"],
  nothing_to_rerun: [409, "Nothing to re-run"],
  nothing_to_compensate: [409, "Nothing to compensate"],
  unknown_step: [400, "Unknown step"],
  invalid_rerun: [400, "Invalid re-run request"],
  invalid_signal: [422, "Invalid signal"],
  signal_pending: [409, "Signal already pending"],
  unknown_signal: [404, "Unknown signal"],
  invalid_decision: [400, "Invalid decision"],
  approval_not_found: [404, "Approval not found"],
  approval_already_decided: [409, "Approval already decided"],
  delivery_not_found: [404, "Delivery not found"],
  schedule_not_found: [404, "Schedule not found"],
  too_many_firings: [400, "Too many firings"],
  rate_limited: [429, "Too many requests"],
  queue_full: [429, "Queue full"],
  run_failed: [500, "Run failed"],
  response_failed: [500, "Response failed"],
  server_misconfigured: [500, "Server misconfigured"],
  build_failed: [503, "Build failed"],
  internal_error: [500, "Internal error"],
} as const satisfies Record<string, readonly [number, string]>;

export type ProblemCode = keyof typeof PROBLEMS;

export interface ProblemDetail {
  path: string;
  message: string;
}

export class HttpProblem extends Error {
  readonly code: ProblemCode;
  readonly status: number;
  readonly errors: ProblemDetail[] | undefined;
  readonly headers: Record<string, string>;
  /** Extension members of the problem body (e.g. `run_id` and `error` of `run_failed`). */
  readonly extra: Record<string, unknown>;
  constructor(
    code: ProblemCode,
    detail: string,
    opts: {
      errors?: ProblemDetail[];
      headers?: Record<string, string>;
      extra?: Record<string, unknown>;
    } = {},
  ) {
    super(detail);
    this.name = "HttpProblem";
    this.code = code;
    this.status = PROBLEMS[code][0];
    this.errors = opts.errors;
    this.headers = opts.headers ?? {};
    this.extra = opts.extra ?? {};
  }

  /** The problem a refusal of the run layer (src/run/refusal.ts: its codes are problem codes) is answered with. */
  static from(refusal: {
    code: ProblemCode;
    message: string;
    errors?: ProblemDetail[] | undefined;
  }): HttpProblem {
    return new HttpProblem(refusal.code, refusal.message, refusal.errors ? { errors: refusal.errors } : {});
  }

  toResponse(): Response {
    const body: Record<string, unknown> = {
      ...this.extra,
      type: `urn:workflow-edge:problem:${this.code}`,
      title: PROBLEMS[this.code][1],
      status: this.status,
      detail: this.message,
      code: this.code,
    };
    if (this.errors) body.errors = this.errors;
    return new Response(JSON.stringify(body), {
      status: this.status,
      headers: { "content-type": "application/problem+json", ...this.headers },
    });
  }
}
