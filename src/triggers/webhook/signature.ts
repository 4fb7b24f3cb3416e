/**
 * Signed deliveries (docs/triggers.md): reads the secrets of the workflow's scheme from the
 * Worker's env (an unset one fails closed with 500), asks the scheme's verifier, and turns
 * every refusal into one and the same 401. Also names the delivery id a sender repeats on its
 * retries, which becomes the run's idempotency key when the request has none of its own.
 */
import type { JsonObject, SignatureAuth } from "../../bundle.ts";
import { HttpProblem } from "../../common/problem.ts";
import { configuredSecrets, unauthorized } from "../credentials.ts";
import { BadSecret, type Delivery, SCHEMES } from "./schemes.ts";

/** The secrets (or, for discord, the public key) a signature is checked against. */
export function schemeKeys(auth: SignatureAuth, env: Record<string, unknown>): string[] {
  if (auth.scheme !== "discord") return configuredSecrets(auth.secretEnvs, env, "signing secret");
  const pk = auth.publicKey;
  if (pk && "hex" in pk) return [pk.hex];
  return configuredSecrets(pk ? [pk.env] : [], env, "public key");
}

/** Throws 401 unless the delivery carries a valid signature of the workflow's scheme. */
export async function verifySignature(
  auth: SignatureAuth,
  delivery: Delivery,
  env: Record<string, unknown>,
): Promise<void> {
  const keys = schemeKeys(auth, env);
  let ok: boolean;
  try {
    ok = await SCHEMES[auth.scheme].verify(auth, keys, delivery);
  } catch (e) {
    if (e instanceof BadSecret) throw new HttpProblem("server_misconfigured", e.message);
    // Anything a malformed request can make Web Crypto throw is a refusal like any other.
    ok = false;
  }
  if (!ok) throw unauthorized();
}

const MAX_KEY = 255;

/** The sender's delivery id (same on every retry of one delivery), or null. */
export function deliveryId(auth: SignatureAuth, headers: Headers, params: JsonObject): string | null {
  const where = SCHEMES[auth.scheme].deliveryId;
  if (where === null) return null;
  const raw = "header" in where ? headers.get(where.header) : params[where.bodyField];
  const id = typeof raw === "number" ? String(raw) : raw;
  return typeof id === "string" && id.length > 0 && id.length <= MAX_KEY ? id : null;
}
