/**
 * Standard Webhooks (standardwebhooks.com), written once: the secret's form (`whsec_<base64>`),
 * the signed content (`<id>.<timestamp>.<body>`) and the `v1,<base64 HMAC-SHA256>` signature.
 * Webhook steps and approval notifications sign with it; the `standard-webhooks` invoke scheme
 * verifies with the same key reading.
 */

/** The base64 key of a secret `whsec_<base64>` (the prefix is optional). */
export function secretKeyBase64(secret: string): string {
  return secret.startsWith("whsec_") ? secret.slice("whsec_".length) : secret;
}

/** The HMAC key of a Standard Webhooks secret; throws when the secret is not of the form. */
export async function importSigningKey(secret: string): Promise<CryptoKey> {
  const binary = atob(secretKeyBase64(secret));
  if (binary.length === 0) throw new Error("a Standard Webhooks secret is whsec_<base64 key>");
  const raw = Uint8Array.from(binary, (c) => c.charCodeAt(0));
  return crypto.subtle.importKey("raw", raw, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
}

/** What is signed: `<id>.<timestamp>.` followed by the body. */
export function signedContentPrefix(id: string, timestamp: string): string {
  return `${id}.${timestamp}.`;
}

/** `v1,<base64 HMAC-SHA256 of "id.timestamp.body">`. */
export async function signStandardWebhook(
  key: CryptoKey,
  id: string,
  timestamp: string,
  body: string,
): Promise<string> {
  const content = new TextEncoder().encode(signedContentPrefix(id, timestamp) + body);
  const mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, content));
  let binary = "";
  for (const b of mac) binary += String.fromCharCode(b);
  return `v1,${btoa(binary)}`;
}

/** The three headers of one signed delivery (`webhook-id` stays the same on every attempt). */
export async function standardWebhookHeaders(
  key: CryptoKey,
  id: string,
  nowMs: number,
  body: string,
): Promise<Array<[string, string]>> {
  // A fresh timestamp per attempt: receivers reject signatures older than a few minutes.
  const timestamp = String(Math.floor(nowMs / 1000));
  return [
    ["webhook-id", id],
    ["webhook-timestamp", timestamp],
    ["webhook-signature", await signStandardWebhook(key, id, timestamp, body)],
  ];
}
