/**
 * A2A 1.0's errors (docs/a2a.md, "Errors"): JSON-RPC errors with the protocol's codes, each with an
 * `error.data` of `google.rpc.ErrorInfo` (its `reason` the error's name in upper snake case), and
 * -32602 with a `google.rpc.BadRequest` naming every field that is wrong.
 */
import type { Json } from "../../bundle.ts";
import { INTERNAL_ERROR, INVALID_PARAMS, RpcError } from "../json-rpc.ts";

const DOMAIN = "a2a-protocol.org";

export const A2A_ERRORS = {
  TASK_NOT_FOUND: -32001,
  TASK_NOT_CANCELABLE: -32002,
  PUSH_NOTIFICATION_NOT_SUPPORTED: -32003,
  UNSUPPORTED_OPERATION: -32004,
  CONTENT_TYPE_NOT_SUPPORTED: -32005,
  VERSION_NOT_SUPPORTED: -32009,
} as const;

export type A2aReason = keyof typeof A2A_ERRORS | "INVALID_PARAMS" | "RATE_LIMITED" | "INTERNAL";

function errorInfo(reason: string, metadata?: Record<string, string>): Json {
  return [
    {
      "@type": "type.googleapis.com/google.rpc.ErrorInfo",
      reason,
      domain: DOMAIN,
      ...(metadata ? { metadata } : {}),
    },
  ];
}

/** An A2A error by its name (`TASK_NOT_FOUND`, …). */
export function a2aError(
  reason: keyof typeof A2A_ERRORS,
  message: string,
  metadata?: Record<string, string>,
): RpcError {
  return new RpcError(A2A_ERRORS[reason], message, errorInfo(reason, metadata));
}

/** -32602 naming each field that is wrong (`google.rpc.BadRequest`). */
export function badRequest(
  message: string,
  violations: Array<{ field: string; description: string }>,
): RpcError {
  return new RpcError(INVALID_PARAMS, message, [
    { "@type": "type.googleapis.com/google.rpc.BadRequest", fieldViolations: violations },
  ]);
}

/** A refusal of the run layer that is not about the params (a rate limit, a full queue): the code in `reason`. */
export function refused(code: string, message: string, httpStatus = 200): RpcError {
  return new RpcError(INTERNAL_ERROR, `${code}: ${message}`, errorInfo(code.toUpperCase()), httpStatus);
}
