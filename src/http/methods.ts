/**
 * A known path asked with a method it does not serve (RFC 9110 §15.5.6): 405 with `Allow`, not
 * 404, so that a client learns what to send instead; OPTIONS answers 204 with the same `Allow`.
 * The methods come from the app's own route table, so a new route needs nothing here.
 */
import { HttpProblem } from "../common/problem.ts";

interface Route {
  method: string;
  path: string;
}

const ORDER = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"];

/** A Hono route pattern (`/runs/:id`, `/runs/:id/steps/*`) as an anchored regular expression. */
function pattern(path: string): RegExp {
  const source = path
    .split("/")
    .map((seg) =>
      seg === "*" ? ".*" : seg.startsWith(":") ? "[^/]+" : seg.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"),
    )
    .join("/");
  return new RegExp(`^${source}$`);
}

/** The methods the routes serve at `path` (HEAD wherever GET is), in a stable order; [] for none. */
export function allowedMethods(routes: readonly Route[], path: string): string[] {
  const methods = new Set<string>();
  for (const r of routes) {
    if (r.method === "ALL" || !pattern(r.path).test(path)) continue;
    methods.add(r.method);
    if (r.method === "GET") methods.add("HEAD");
  }
  return ORDER.filter((m) => methods.has(m));
}

/** The answer for a request no route matched: 204 (OPTIONS) or 405 on a known path, else 404. */
export function unmatched(routes: readonly Route[], method: string, path: string): Response {
  const methods = allowedMethods(routes, path);
  if (methods.length === 0) return new HttpProblem("not_found", "no such route").toResponse();
  const allow = [...methods, "OPTIONS"].join(", ");
  if (method === "OPTIONS") return new Response(null, { status: 204, headers: { allow } });
  return new HttpProblem("method_not_allowed", `${method} is not served here; use ${methods.join(" or ")}`, {
    headers: { allow },
  }).toResponse();
}
