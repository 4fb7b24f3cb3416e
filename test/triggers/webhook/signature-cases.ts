/**
 * Every signature scheme's cases (test/triggers/webhook/signature-schemes.test.ts, and the property
 * test test/props/signatures.test.ts): a sender's secrets, a body, which header holds the
 * signature and whether a time is signed; deliveries signed by the senders' own libraries
 * (test/servers/signer.ts) and verified at a chosen instant.
 */
import { generateKeyPairSync } from "node:crypto";
import type { SignatureAuth, SignatureScheme } from "../../../src/bundle.ts";
import { type Delivery, SCHEMES } from "../../../src/triggers/webhook/schemes.ts";
import { type SignRequest, signDelivery } from "../../servers/signer.ts";

export const { privateKey, publicKey } = generateKeyPairSync("ed25519");
export const DISCORD_KEY = publicKey.export({ format: "der", type: "spki" }).subarray(-32).toString("hex");
/** A fixed instant (seconds): deliveries are signed at it and verified at a chosen distance from it. */
export const T = 1_790_000_000;
export const URL_SEEN = "https://flows.example.com/invoke/sms?x=1";

export interface Scheme {
  scheme: SignatureScheme;
  secret: string;
  other: string;
  body: string;
  contentType: string;
  /** Whether the scheme signs a time (then a stale delivery is refused). */
  timed: boolean;
  /** The header holding the signature. */
  signature: string;
  hmac?: SignatureAuth["hmac"];
}

export const SCHEMES_UNDER_TEST: Scheme[] = [
  {
    scheme: "github",
    secret: "gh-secret-1234",
    other: "gh-other-5678",
    body: '{"action":"opened"}',
    contentType: "application/json",
    timed: false,
    signature: "x-hub-signature-256",
  },
  {
    scheme: "stripe",
    secret: "whsec_stripe_1234",
    other: "whsec_stripe_5678",
    body: '{"id":"evt_1"}',
    contentType: "application/json",
    timed: true,
    signature: "stripe-signature",
  },
  {
    scheme: "slack",
    secret: "slack-secret-1234",
    other: "slack-other-5678",
    body: '{"event_id":"Ev1"}',
    contentType: "application/json",
    timed: true,
    signature: "x-slack-signature",
  },
  {
    scheme: "standard-webhooks",
    secret: "whsec_c3RhbmRhcmQta2V5LTEyMzQ=",
    other: "whsec_b3RoZXIta2V5LTU2Nzg=",
    body: '{"type":"a"}',
    contentType: "application/json",
    timed: true,
    signature: "webhook-signature",
  },
  {
    scheme: "shopify",
    secret: "shpss_1234abcd",
    other: "shpss_5678efgh",
    body: '{"id":1}',
    contentType: "application/json",
    timed: false,
    signature: "x-shopify-hmac-sha256",
  },
  {
    scheme: "linear",
    secret: "lin_wh_1234",
    other: "lin_wh_5678",
    body: `{"webhookTimestamp":${T * 1000}}`,
    contentType: "application/json",
    timed: true,
    signature: "linear-signature",
  },
  {
    scheme: "twilio",
    secret: "twilio-token-1234",
    other: "twilio-token-5678",
    body: "Body=hi&From=%2B15550001111&MediaUrl=b&MediaUrl=a",
    contentType: "application/x-www-form-urlencoded",
    timed: false,
    signature: "x-twilio-signature",
  },
  {
    scheme: "discord",
    secret: "",
    other: "",
    body: '{"id":"1","type":1}',
    contentType: "application/json",
    timed: true,
    signature: "x-signature-ed25519",
  },
  {
    scheme: "hmac",
    secret: "acme-secret-1234",
    other: "acme-other-5678",
    body: '{"n":1}',
    contentType: "application/json",
    timed: false,
    signature: "x-acme-signature",
    hmac: { header: "x-acme-signature", prefix: "sha512=", algorithm: "sha512", encoding: "base64" },
  },
];

export function authOf(s: Scheme, secretEnvs = ["S1"]): SignatureAuth {
  return {
    scheme: s.scheme,
    secretEnvs: s.scheme === "discord" ? [] : secretEnvs,
    toleranceS: 300,
    hmac: s.hmac ?? null,
    url: null,
    publicKey: s.scheme === "discord" ? { hex: DISCORD_KEY } : null,
  };
}

export async function signed(
  s: Scheme,
  over: Partial<SignRequest> = {},
): Promise<{ body: string; headers: Headers; url: string }> {
  const body = over.body ?? s.body;
  const h = await signDelivery(
    {
      scheme: s.scheme,
      secret: s.secret,
      body,
      timestamp: T,
      url: URL_SEEN,
      contentType: s.contentType,
      id: "delivery-1",
      ...(s.hmac
        ? {
            hmac: {
              header: s.hmac.header,
              prefix: s.hmac.prefix,
              algorithm: s.hmac.algorithm,
              encoding: s.hmac.encoding,
            },
          }
        : {}),
      ...over,
    },
    privateKey,
  );
  const url = h["x-signed-url"] ?? URL_SEEN;
  const headers = new Headers({ "content-type": s.contentType });
  for (const [k, v] of Object.entries(h)) if (k !== "x-signed-url") headers.set(k, v);
  return { body, headers, url };
}

export function delivery(d: { body: string; headers: Headers; url: string }, nowS = T): Delivery {
  return {
    body: new TextEncoder().encode(d.body) as Uint8Array<ArrayBuffer>,
    headers: d.headers,
    url: d.url,
    now: nowS * 1000,
  };
}

export function verify(s: Scheme, d: Delivery, secrets = [s.secret]): Promise<boolean> {
  return SCHEMES[s.scheme].verify(authOf(s), s.scheme === "discord" ? [DISCORD_KEY] : secrets, d);
}
