/**
 * The webhook senders' signature schemes (docs/triggers.md), one small verifier each, all on Web
 * Crypto: HMAC and Ed25519 through `crypto.subtle.verify`, which compares in constant time. A
 * verifier sees the raw body bytes exactly as received (nothing is parsed before it says yes)
 * and answers only yes or no: the caller turns every no into the same 401, so no detail of what
 * was expected ever reaches the sender. Adding a sender is one entry here plus its test.
 * Header values come as `Headers` gives them, without leading or trailing white space.
 */

import type { SignatureAuth, SignatureScheme } from "../../bundle.ts";
import { secretKeyBase64, signedContentPrefix } from "../../common/standard-webhooks.ts";
import { formFields, isJsonMedia, mediaType } from "./body.ts";

export interface Delivery {
  body: Bytes;
  headers: Headers;
  /** The request URL as the Worker sees it. */
  url: string;
  /** Epoch ms. */
  now: number;
}

export interface SchemeVerifier {
  /**
   * Whether the delivery is signed by one of `secrets` (the env values of `secret`; for
   * `discord` the public key as hex). Throws only for a secret that cannot be a key of this
   * scheme (a configuration error).
   */
  verify(auth: SignatureAuth, secrets: string[], d: Delivery): Promise<boolean>;
  /** Where the sender puts the id that stays the same across its retries of one delivery. */
  deliveryId: { header: string } | { bodyField: string } | null;
  /** The headers the sender sends (signature first), as documented in the OpenAPI document. */
  headers: Array<[name: string, meaning: string]>;
}

/** A secret that cannot key this scheme: a deployment problem, never the sender's. */
export class BadSecret extends Error {}

/** Bytes Web Crypto accepts (never a SharedArrayBuffer view). */
export type Bytes = Uint8Array<ArrayBuffer>;

const HASH = { sha1: "SHA-1", sha256: "SHA-256", sha512: "SHA-512" } as const;
const encoder = new TextEncoder();

function concat(...parts: Array<string | Bytes>): Bytes {
  const bytes = parts.map((p) => (typeof p === "string" ? (encoder.encode(p) as Bytes) : p));
  const out = new Uint8Array(bytes.reduce((n, b) => n + b.byteLength, 0));
  let at = 0;
  for (const b of bytes) {
    out.set(b, at);
    at += b.byteLength;
  }
  return out;
}

export function hexBytes(text: string): Bytes | null {
  // Stryker disable next-line ConditionalExpression: the pattern refuses an empty text too
  if (text.length === 0 || text.length % 2 !== 0 || !/^[0-9a-fA-F]+$/.test(text)) return null;
  const out = new Uint8Array(text.length / 2);
  // Stryker disable next-line EqualityOperator: a typed array ignores a write past its end
  for (let i = 0; i < out.length; i++) out[i] = Number.parseInt(text.slice(2 * i, 2 * i + 2), 16);
  return out;
}

export function base64Bytes(text: string): Bytes | null {
  // What the pattern lets through, atob decodes (it throws only on what the pattern refuses).
  // Stryker disable next-line ConditionalExpression: the pattern refuses an empty text too
  if (text.length === 0 || text.length % 4 !== 0 || !/^[A-Za-z0-9+/]+={0,2}$/.test(text)) return null;
  return Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
}

/** Constant-time equality of two byte strings (their lengths are public: hash sizes). */
function sameBytes(a: Bytes, b: Bytes): boolean {
  if (a.byteLength !== b.byteLength) return false;
  let diff = 0;
  // Stryker disable next-line EqualityOperator: one index past the end XORs undefined with undefined, 0
  for (let i = 0; i < a.byteLength; i++) diff |= (a[i] as number) ^ (b[i] as number);
  return diff === 0;
}

/** Whether any of `signatures` is the HMAC of `data` under any of `keys`. */
async function anyHmac(
  hash: (typeof HASH)[keyof typeof HASH],
  keys: Bytes[],
  signatures: Bytes[],
  data: Bytes,
): Promise<boolean> {
  let ok = false;
  for (const raw of keys) {
    // Stryker disable next-line BooleanLiteral: an extractable key verifies the same (never exported either way)
    const key = await crypto.subtle.importKey("raw", raw, { name: "HMAC", hash }, false, ["verify"]);
    for (const sig of signatures) if (await crypto.subtle.verify("HMAC", key, sig, data)) ok = true;
  }
  return ok;
}

const utf8Keys = (secrets: string[]) => secrets.map((s) => encoder.encode(s) as Bytes);

/** A signed timestamp (seconds) within `toleranceS` of now, either way. */
function fresh(seconds: string | null, now: number, toleranceS: number): boolean {
  // Stryker disable next-line ConditionalExpression: the pattern refuses a missing one too (as "null")
  if (seconds === null || !/^\d{1,12}$/.test(seconds)) return false;
  return Math.abs(now / 1000 - Number(seconds)) <= toleranceS;
}

/** `prefix` + the body's HMAC in `encoding`, in `header`. */
function headerHmac(
  header: string,
  prefix: string,
  encoding: "hex" | "base64",
  hash: (typeof HASH)[keyof typeof HASH],
) {
  return async (secrets: string[], d: Delivery): Promise<boolean> => {
    const value = d.headers.get(header);
    if (!value?.startsWith(prefix)) return false;
    const text = value.slice(prefix.length);
    const sig = encoding === "hex" ? hexBytes(text) : base64Bytes(text);
    return sig !== null && anyHmac(hash, utf8Keys(secrets), [sig], d.body);
  };
}

const github = headerHmac("x-hub-signature-256", "sha256=", "hex", "SHA-256");
// Stryker disable next-line StringLiteral: any encoding but "hex" is read as base64
const shopify = headerHmac("x-shopify-hmac-sha256", "", "base64", "SHA-256");
const linearSignature = headerHmac("linear-signature", "", "hex", "SHA-256");

export const SCHEMES: Record<SignatureScheme, SchemeVerifier> = {
  hmac: {
    deliveryId: null,
    headers: [], // the workflow names its own header
    verify: (auth, secrets, d) => {
      const h = auth.hmac;
      if (!h) return Promise.resolve(false);
      return headerHmac(h.header, h.prefix, h.encoding, HASH[h.algorithm])(secrets, d);
    },
  },

  github: {
    deliveryId: { header: "x-github-delivery" },
    headers: [
      ["X-Hub-Signature-256", "`sha256=` + hex HMAC-SHA256 of the body"],
      ["X-GitHub-Delivery", "delivery id (a redelivery reuses the run)"],
    ],
    verify: (_a, secrets, d) => github(secrets, d),
  },

  stripe: {
    deliveryId: { bodyField: "id" },
    headers: [["Stripe-Signature", "`t=<timestamp>,v1=<hex HMAC-SHA256 of <t>.<body>>`"]],
    async verify(auth, secrets, d) {
      // t=<ts>,v1=<hex>[,v1=<hex>…][,v0=…]: every v1 is a candidate (Stripe rolls secrets that way too).
      let t: string | null = null;
      const v1: Bytes[] = [];
      // Stryker disable next-line StringLiteral: no other text without `t=` and `v1=` items verifies either
      for (const item of (d.headers.get("stripe-signature") ?? "").split(",")) {
        const eq = item.indexOf("=");
        const k = item.slice(0, eq).trim();
        const v = item.slice(eq + 1).trim();
        // Stryker disable next-line EqualityOperator: an item `=…` has the empty key, which names nothing either
        if (eq < 0) continue;
        if (k === "t") t = v;
        else if (k === "v1") {
          const sig = hexBytes(v);
          if (sig) v1.push(sig);
        }
      }
      // Stryker disable next-line ConditionalExpression,LogicalOperator: each check only saves work: fresh refuses no t, and no v1 verifies nothing
      if (t === null || v1.length === 0 || !fresh(t, d.now, auth.toleranceS)) return false;
      return anyHmac("SHA-256", utf8Keys(secrets), v1, concat(`${t}.`, d.body));
    },
  },

  slack: {
    deliveryId: { bodyField: "event_id" },
    headers: [
      ["X-Slack-Signature", "`v0=` + hex HMAC-SHA256 of `v0:<timestamp>:<body>`"],
      ["X-Slack-Request-Timestamp", "seconds since the epoch"],
    ],
    async verify(auth, secrets, d) {
      const ts = d.headers.get("x-slack-request-timestamp");
      // Stryker disable next-line StringLiteral: any text without `v0=` is refused alike
      const value = d.headers.get("x-slack-signature") ?? "";
      const sig = value.startsWith("v0=") ? hexBytes(value.slice(3)) : null;
      if (sig === null || !fresh(ts, d.now, auth.toleranceS)) return false;
      return anyHmac("SHA-256", utf8Keys(secrets), [sig], concat(`v0:${ts}:`, d.body));
    },
  },

  "standard-webhooks": {
    deliveryId: { header: "webhook-id" },
    headers: [
      ["webhook-signature", "space-separated `v1,<base64 HMAC-SHA256 of <id>.<timestamp>.<body>>`"],
      ["webhook-id", "message id (a redelivery reuses the run)"],
      ["webhook-timestamp", "seconds since the epoch"],
    ],
    async verify(auth, secrets, d) {
      const id = d.headers.get("webhook-id");
      const ts = d.headers.get("webhook-timestamp");
      // Stryker disable next-line StringLiteral: any text without a `v1,` item is refused alike
      const sigs = (d.headers.get("webhook-signature") ?? "")
        .split(" ")
        .filter((s) => s.startsWith("v1,"))
        .map((s) => base64Bytes(s.slice(3)))
        .filter((s): s is Bytes => s !== null);
      // Stryker disable next-line ConditionalExpression: no signature verifies nothing; the check only saves work
      if (!id || sigs.length === 0 || !fresh(ts, d.now, auth.toleranceS)) return false;
      const keys = secrets.map((s) => {
        const key = base64Bytes(secretKeyBase64(s));
        if (!key) throw new BadSecret("a standard-webhooks secret must be whsec_<base64 key>");
        return key;
      });
      // Stryker disable next-line StringLiteral: fresh has refused a missing timestamp above
      return anyHmac("SHA-256", keys, sigs, concat(signedContentPrefix(id, ts ?? ""), d.body));
    },
  },

  shopify: {
    deliveryId: { header: "x-shopify-webhook-id" },
    headers: [
      ["X-Shopify-Hmac-Sha256", "base64 HMAC-SHA256 of the body"],
      ["X-Shopify-Webhook-Id", "delivery id (a redelivery reuses the run)"],
    ],
    verify: (_a, secrets, d) => shopify(secrets, d),
  },

  linear: {
    deliveryId: { header: "linear-delivery" },
    headers: [
      ["Linear-Signature", "hex HMAC-SHA256 of the body (whose `webhookTimestamp` must be recent)"],
      ["Linear-Delivery", "delivery id (a redelivery reuses the run)"],
    ],
    async verify(auth, secrets, d) {
      if (!(await linearSignature(secrets, d))) return false;
      // The signed body carries its own time, in milliseconds.
      let ts: unknown = null;
      try {
        ts = (JSON.parse(new TextDecoder().decode(d.body)) as { webhookTimestamp?: unknown })
          .webhookTimestamp;
      } catch {
        // Not JSON: no timestamp, refused below.
      }
      // Stryker disable next-line ConditionalExpression,LogicalOperator: Number.isFinite is false for anything but a number, so the typeof check decides nothing
      return typeof ts === "number" && Number.isFinite(ts) && Math.abs(d.now - ts) <= auth.toleranceS * 1000;
    },
  },

  twilio: {
    deliveryId: { header: "i-twilio-idempotency-token" },
    headers: [
      ["X-Twilio-Signature", "base64 HMAC-SHA1 of the URL + the sorted form fields"],
      ["I-Twilio-Idempotency-Token", "delivery id (a redelivery reuses the run)"],
    ],
    async verify(auth, secrets, d) {
      // Stryker disable next-line StringLiteral: any text that is no base64 is refused alike
      const sig = base64Bytes(d.headers.get("x-twilio-signature") ?? "");
      if (sig === null) return false;
      const url = signedTwilioUrl(auth.url, d.url);
      let params = "";
      if (mediaType(d.headers.get("content-type")) === "application/x-www-form-urlencoded") {
        // Each field as key + value, keys sorted; a repeated key's distinct values sorted (twilio-node).
        const fields = formFields(new TextDecoder().decode(d.body));
        for (const key of [...fields.keys()].sort()) {
          for (const v of [...new Set(fields.get(key))].sort()) params += key + v;
        }
      } else if (isJsonMedia(mediaType(d.headers.get("content-type")))) {
        // JSON bodies are covered by the bodySHA256 query parameter the URL carries.
        // Stryker disable next-line StringLiteral: any text that is no hex is refused alike
        const claimed = hexBytes(new URL(url).searchParams.get("bodySHA256") ?? "");
        const actual = new Uint8Array(await crypto.subtle.digest("SHA-256", d.body));
        if (claimed === null || !sameBytes(claimed, actual)) return false;
      } else {
        return false;
      }
      const candidates = [url, toggledPort(url)].filter((u): u is string => u !== null);
      const data = candidates.map((u) => concat(u, params));
      let ok = false;
      for (const bytes of data) if (await anyHmac("SHA-1", utf8Keys(secrets), [sig], bytes)) ok = true;
      return ok;
    },
  },

  discord: {
    deliveryId: { bodyField: "id" },
    headers: [
      ["X-Signature-Ed25519", "hex Ed25519 signature of `<timestamp><body>`"],
      ["X-Signature-Timestamp", "seconds since the epoch"],
    ],
    async verify(auth, keys, d) {
      // Stryker disable next-line StringLiteral: any text that is no hex is refused alike
      const sig = hexBytes(d.headers.get("x-signature-ed25519") ?? "");
      const ts = d.headers.get("x-signature-timestamp");
      // Stryker disable next-line ConditionalExpression: Web Crypto refuses an Ed25519 signature of another length as well
      if (sig === null || sig.byteLength !== 64 || !fresh(ts, d.now, auth.toleranceS)) return false;
      // Stryker disable next-line StringLiteral: any text that is no hex key is refused alike
      const raw = hexBytes(keys[0] ?? "");
      if (raw === null || raw.byteLength !== 32) throw new BadSecret("a discord public key is 64 hex digits");
      // Stryker disable next-line BooleanLiteral: an extractable key verifies the same (never exported either way)
      const key = await crypto.subtle.importKey("raw", raw, { name: "Ed25519" }, false, ["verify"]);
      // Stryker disable next-line StringLiteral: fresh has refused a missing timestamp above
      return crypto.subtle.verify("Ed25519", key, sig, concat(ts ?? "", d.body));
    },
  },
};

/**
 * The URL Twilio signed: the configured public URL (for routes behind a rewrite) with the
 * request's query string when the configured one has none, else the URL the Worker sees.
 */
function signedTwilioUrl(configured: string | null, seen: string): string {
  if (configured === null) return seen;
  if (configured.includes("?")) return configured;
  return configured + new URL(seen).search;
}

/** The same URL with its default port written out, or removed (Twilio may sign either form). */
function toggledPort(url: string): string | null {
  // Stryker disable next-line Regex: the URL starts with its scheme and `.*` runs to its end either way
  const m = /^(https?):\/\/([^/?#]*)(.*)$/i.exec(url);
  // Stryker disable next-line ConditionalExpression: the URL is http(s) here (the request's, or the configured one the build checked)
  if (!m) return null;
  const [, scheme, authority, rest] = m as unknown as [string, string, string, string];
  const port = scheme.toLowerCase() === "https" ? "443" : "80";
  if (authority.endsWith(`:${port}`)) return `${scheme}://${authority.slice(0, -port.length - 1)}${rest}`;
  // Stryker disable next-line ConditionalExpression,Regex: without it, a URL with another port gets one more candidate, which nothing signs
  if (/:\d+$/.test(authority)) return null;
  return `${scheme}://${authority}:${port}${rest}`;
}
