/**
 * Invoke authentication (SPEC section 5). The expected secret is read from the Worker's env at
 * request time; an unset secret fails closed (500), and the presented value is compared in
 * constant time (both sides are hashed first so their lengths never leak either).
 */
import type { CompiledAuth } from "../bundle.ts";
import { HttpProblem } from "./problem.ts";

async function digest(value: string): Promise<ArrayBuffer> {
  return crypto.subtle.digest("SHA-256", new TextEncoder().encode(value));
}

export async function constantTimeEqual(a: string, b: string): Promise<boolean> {
  const [da, db] = await Promise.all([digest(a), digest(b)]);
  return crypto.subtle.timingSafeEqual(da, db);
}

/** Throws HttpProblem 401 (bad or missing credentials) or 500 (secret not configured). */
export async function requireAuth(
  auth: CompiledAuth | null,
  headers: Headers,
  env: Record<string, unknown>,
): Promise<void> {
  if (!auth) return;
  const expected = env[auth.secretEnv];
  if (typeof expected !== "string" || expected === "") {
    throw new HttpProblem(
      "server_misconfigured",
      `the invoke secret of this workflow is not configured (set ${auth.secretEnv} with wrangler secret put, or in .dev.vars)`,
    );
  }
  const presented = headers.get(auth.header);
  let candidate: string | null = presented;
  if (auth.scheme === "bearer" && presented !== null) {
    const m = /^bearer[ \t]+(.*)$/is.exec(presented.trim());
    candidate = m ? (m[1] ?? "") : null;
  }
  // Compare even when the header is missing, so both failures take the same time.
  const ok = await constantTimeEqual(candidate ?? "", expected);
  if (candidate === null || !ok) {
    throw new HttpProblem("unauthorized", "missing or invalid credentials", {
      headers: auth.scheme === "bearer" ? { "www-authenticate": 'Bearer realm="workflow-edge"' } : {},
    });
  }
}
