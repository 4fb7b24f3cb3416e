/**
 * Credential headers (`invoke.auth` with `bearer` or `raw`; docs/triggers.md), shared by every trigger
 * a caller reaches over HTTP: the webhook's invoke, the protocols (docs/protocols.md) and every
 * route that reads runs (webhook/auth.ts). Expected secrets are read from the Worker's env at
 * request time; an unset one fails closed (500). Presented values are compared in constant time
 * (both sides hashed first, so their lengths never leak either).
 */
import { type CompiledAuth, isSignature, type TokenAuth } from "../bundle.ts";
import { HttpProblem } from "../common/problem.ts";

/** The challenge of a 401 where a bearer token opens the door. */
export const BEARER_CHALLENGE = { "www-authenticate": 'Bearer realm="workflow-edge"' };

/** 401 `unauthorized` (with the challenge the caller should answer). */
export function unauthorized(headers: Record<string, string> = {}): HttpProblem {
  return new HttpProblem("unauthorized", "missing or invalid credentials", { headers });
}

/** The env values of `names`; 500 server_misconfigured when any is unset. */
export function configuredSecrets(names: string[], env: Record<string, unknown>, what: string): string[] {
  const unset = names.filter((n) => typeof env[n] !== "string" || env[n] === "");
  if (unset.length > 0) {
    throw new HttpProblem(
      "server_misconfigured",
      `the ${what} of this workflow is not configured (set ${unset.join(", ")} with wrangler secret put, or in .dev.vars)`,
    );
  }
  return names.map((n) => env[n] as string);
}

async function digest(value: string): Promise<ArrayBuffer> {
  return crypto.subtle.digest("SHA-256", new TextEncoder().encode(value));
}

/**
 * Whether `a` equals `b`, in a time that depends on neither: their SHA-256 digests (always 32
 * bytes) are compared byte by byte without stopping early.
 */
export async function constantTimeEqual(a: string, b: string): Promise<boolean> {
  const [da, db] = await Promise.all([digest(a), digest(b)]);
  const x = new Uint8Array(da);
  const y = new Uint8Array(db);
  let diff = 0;
  for (let i = 0; i < x.length; i++) diff |= (x[i] as number) ^ (y[i] as number);
  return diff === 0;
}

/** Whether `presented` equals any of `secrets` (every one is compared, whatever matches). */
export async function matchesAny(presented: string | null, secrets: string[]): Promise<boolean> {
  let ok = false;
  // Compare even when nothing was presented, so both failures take the same time.
  for (const s of secrets) if (await constantTimeEqual(presented ?? "", s)) ok = true;
  return presented !== null && ok;
}

/** The token of `Bearer <token>` (scheme case-insensitive), else null. */
export function bearerToken(value: string | null): string | null {
  if (value === null) return null;
  const m = /^bearer[ \t]+(.*)$/is.exec(value.trim());
  return m ? (m[1] ?? "") : null;
}

/** `raw` / `bearer`: throws 401 (bad or missing credentials) or 500 (secret not configured). */
export async function requireToken(
  auth: TokenAuth,
  headers: Headers,
  env: Record<string, unknown>,
): Promise<void> {
  if (!(await tokenOpens(auth, headers, env))) {
    throw unauthorized(auth.scheme === "bearer" ? BEARER_CHALLENGE : {});
  }
}

/** Whether the request's credential header opens `auth` (throws 500 when its secret is not configured). */
export async function tokenOpens(
  auth: TokenAuth,
  headers: Headers,
  env: Record<string, unknown>,
): Promise<boolean> {
  const secrets = configuredSecrets(auth.secretEnvs, env, "invoke secret");
  const presented = headers.get(auth.header);
  const candidate = auth.scheme === "bearer" ? bearerToken(presented) : presented;
  return matchesAny(candidate, secrets);
}

/**
 * A protocol caller (docs/protocols.md): a public workflow lets anyone in; a credential header must
 * match. A signature scheme, which the compiler refuses beside the protocols, fails closed: a
 * protocol request is never signed.
 */
export async function requireCaller(
  auth: CompiledAuth | null,
  headers: Headers,
  env: Record<string, unknown>,
): Promise<void> {
  if (auth === null) return;
  if (isSignature(auth)) throw unauthorized(BEARER_CHALLENGE);
  await requireToken(auth, headers, env);
}

/** Whether the request may call a workflow with `auth` (false, never a 500, when its secret is not configured). */
export async function callerOpens(
  auth: CompiledAuth | null,
  headers: Headers,
  env: Record<string, unknown>,
): Promise<boolean> {
  try {
    await requireCaller(auth, headers, env);
    return true;
  } catch {
    return false;
  }
}
