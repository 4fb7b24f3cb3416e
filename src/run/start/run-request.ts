/**
 * The request headers a run records (`invoke.headers`, docs/triggers.md): the declared ones only,
 * keyed as expressions read them (`X-GitHub-Event` -> `x_github_event`), a missing header as
 * null. The compiler has already refused credential and signature headers, so nothing recorded
 * here is a credential; the run object masks it like params anyway.
 */
import type { CompiledInvoke, JsonObject } from "../../bundle.ts";

export function recordRequest(declared: CompiledInvoke["headers"], headers: Headers): JsonObject {
  const recorded: JsonObject = {};
  for (const h of declared) recorded[h.key] = headers.get(h.name);
  return { headers: recorded };
}
