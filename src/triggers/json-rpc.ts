/**
 * JSON-RPC 2.0 (https://www.jsonrpc.org/specification) as the protocol triggers speak it over HTTP
 * (docs/protocols.md: the MCP server, A2A): one request object per POST, read with the body limits
 * every caller has; errors in JSON-RPC's own shape with the standard codes, and each protocol's
 * codes beside them. A message without an `id` is a notification (answered by the protocol, never
 * with a result).
 */

import type { Json, JsonObject } from "../bundle.ts";
import { isObject } from "../common/guards.ts";
import { HttpProblem } from "../common/problem.ts";
import { parseJsonObject, readBody, utf8 } from "./request-body.ts";

export const PARSE_ERROR = -32700;
export const INVALID_REQUEST = -32600;
export const METHOD_NOT_FOUND = -32601;
export const INVALID_PARAMS = -32602;
export const INTERNAL_ERROR = -32603;

export type RpcId = string | number | null;

export interface RpcRequest {
  id: RpcId;
  /** False for a notification (no `id`): nothing is answered to it. */
  hasId: boolean;
  method: string;
  params: JsonObject;
}

/** A JSON-RPC error: thrown by a method, answered as `{error: {code, message, data?}}`. */
export class RpcError extends Error {
  readonly code: number;
  readonly data: Json | undefined;
  /** The HTTP status the answer carries (200 unless the protocol says otherwise). */
  readonly httpStatus: number;
  constructor(code: number, message: string, data?: Json, status = 200) {
    super(message);
    this.name = "RpcError";
    this.code = code;
    this.data = data;
    this.httpStatus = status;
  }
}

/**
 * The request in the body, or an RpcError with what is wrong (not JSON: -32700; not one request
 * object: -32600). A body over 1 MiB is 413 like any other.
 */
export async function readRpc(req: Request): Promise<RpcRequest> {
  const bytes = await readBody(req);
  let body: JsonObject;
  try {
    body = parseJsonObject(utf8(bytes));
  } catch (e) {
    if (e instanceof HttpProblem && e.code === "invalid_json" && /must be a JSON object/.test(e.message)) {
      throw new RpcError(
        INVALID_REQUEST,
        "a request is one JSON-RPC 2.0 object (batches are not served)",
        undefined,
        400,
      );
    }
    throw new RpcError(PARSE_ERROR, e instanceof Error ? e.message : "the body is not JSON", undefined, 400);
  }
  const hasId = Object.hasOwn(body, "id");
  const id = body.id;
  if (
    body.jsonrpc !== "2.0" ||
    typeof body.method !== "string" ||
    (hasId && id !== null && typeof id !== "string" && typeof id !== "number") ||
    (body.params !== undefined && !isObject(body.params))
  ) {
    throw new RpcError(
      INVALID_REQUEST,
      'not a JSON-RPC 2.0 request (jsonrpc "2.0", a method, params an object)',
      undefined,
      400,
    );
  }
  return {
    id: hasId ? ((id ?? null) as RpcId) : null,
    hasId,
    method: body.method,
    params: (body.params ?? {}) as JsonObject,
  };
}

export function rpcResult(id: RpcId, result: Json): JsonObject {
  return { jsonrpc: "2.0", id, result };
}

export function rpcError(id: RpcId, e: RpcError): JsonObject {
  const error: JsonObject = { code: e.code, message: e.message };
  if (e.data !== undefined) error.data = e.data;
  return { jsonrpc: "2.0", id, error };
}

/** An answer as `application/json`. */
export function rpcResponse(body: JsonObject, status = 200, headers: Record<string, string> = {}): Response {
  return Response.json(body, { status, headers });
}
