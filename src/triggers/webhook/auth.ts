/**
 * Who may invoke a workflow, and who may read its runs (docs/triggers.md). Credential headers are
 * checked by ../credentials.ts (constant time, fail closed); a sender's signature by signature.ts.
 *
 * `requireReader` is the one check behind every route that reads or acts on runs (envelope,
 * graph, events, cancel, delete, the listing, approvals, the viewer's data): routes call it and
 * never decide credentials themselves.
 */
import { type CompiledAuth, isSignature } from "../../bundle.ts";
import { HttpProblem } from "../../common/problem.ts";
import {
  BEARER_CHALLENGE,
  bearerToken,
  configuredSecrets,
  matchesAny,
  requireToken,
  unauthorized,
} from "../credentials.ts";
import { readBody } from "../request-body.ts";
import { schemeKeys, verifySignature } from "./signature.ts";

/** `ADMIN_TOKEN` reads the runs of every workflow; shorter than this it is refused as misconfigured. */
export const MIN_ADMIN_TOKEN_LENGTH = 16;

/**
 * The invoke's body bytes, once the caller is known to be allowed: credential headers are
 * checked before the body is read; a signature needs the whole body, so it is read first (413
 * over 1 MiB) and verified on exactly those bytes, before anything parses them.
 */
export async function authenticatedBody(
  auth: CompiledAuth | null,
  req: Request,
  env: Record<string, unknown>,
): Promise<Uint8Array<ArrayBuffer>> {
  if (auth === null) return readBody(req);
  if (!isSignature(auth)) {
    await requireToken(auth, req.headers, env);
    return readBody(req);
  }
  // A missing secret is a deployment problem: say so before reading anything.
  schemeKeys(auth, env);
  const body = await readBody(req);
  await verifySignature(auth, { body, headers: req.headers, url: req.url, now: Date.now() }, env);
  return body;
}

/** The Worker-wide `ADMIN_TOKEN`, or null when unset; 500 when set but too short to be safe. */
function adminToken(env: Record<string, unknown>): string | null {
  const v = env.ADMIN_TOKEN;
  if (typeof v !== "string" || v === "") return null;
  if (v.length < MIN_ADMIN_TOKEN_LENGTH) {
    throw new HttpProblem(
      "server_misconfigured",
      `ADMIN_TOKEN must be at least ${MIN_ADMIN_TOKEN_LENGTH} characters`,
    );
  }
  return v;
}

/**
 * "The workflow's credentials" for reading its runs: nothing for a public workflow;
 * `Authorization: Bearer <ADMIN_TOKEN>` for any workflow; else for `raw` and `bearer` the invoke
 * credential, for a signature scheme `Authorization: Bearer <one of its secrets>` (`discord`
 * has no secret: only the admin token reads its runs). Throws 401 or 500.
 */
export async function requireReader(
  auth: CompiledAuth | null,
  headers: Headers,
  env: Record<string, unknown>,
): Promise<void> {
  if (auth === null) return;
  const admin = adminToken(env);
  const bearer = bearerToken(headers.get("authorization"));
  if (admin !== null && (await matchesAny(bearer, [admin]))) return;
  if (!isSignature(auth)) return requireToken(auth, headers, env);
  const secrets = auth.scheme === "discord" ? [] : configuredSecrets(auth.secretEnvs, env, "signing secret");
  if (!(await matchesAny(bearer, secrets))) throw unauthorized(BEARER_CHALLENGE);
}
