/**
 * Signs webhook deliveries the way the real senders do, using the senders' own libraries as
 * oracles (`@octokit/webhooks-methods`, `stripe`, `standardwebhooks`, `twilio`) and `node:crypto`
 * where the sender documents the recipe (Slack, Shopify, Linear, Discord's Ed25519). Those
 * libraries are Node-only, while the Worker under test runs in workerd: the tests ask this
 * server (a real HTTP server on 127.0.0.1) for the headers, then send the delivery themselves.
 *
 *   POST /sign  {scheme, secret, body, timestamp?, url?, contentType?, id?, hmac?}
 *               -> {headers: {...}} (timestamp in seconds, default now)
 * Discord deliveries are signed with a key pair made at start; its public half (hex) reaches the
 * Worker as the DISCORD_PUBLIC_KEY binding.
 */
import { createHmac, sign as edSign, generateKeyPairSync } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { sign as githubSign } from "@octokit/webhooks-methods";
import { Webhook } from "standardwebhooks";
import Stripe from "stripe";
import twilio from "twilio";

export interface SignRequest {
  scheme: string;
  secret: string;
  body: string;
  /** Seconds since the epoch; default now. */
  timestamp?: number;
  /** The URL the delivery goes to (Twilio signs it). */
  url?: string;
  contentType?: string;
  /** Delivery / message id where the scheme has one in a header. */
  id?: string;
  hmac?: { header: string; prefix?: string; algorithm?: string; encoding?: "hex" | "base64" };
  /** Discord: sign with a key pair other than the one the Worker trusts. */
  otherKey?: boolean;
}

const stripe = new Stripe("sk_test_signer_only_never_used");

export async function signDelivery(
  r: SignRequest,
  discordKey: ReturnType<typeof generateKeyPairSync>["privateKey"],
): Promise<Record<string, string>> {
  const ts = r.timestamp ?? Math.floor(Date.now() / 1000);
  const hmac = (alg: string, data: string) => createHmac(alg, r.secret).update(data, "utf8");
  switch (r.scheme) {
    case "github":
      return {
        "x-hub-signature-256": await githubSign(r.secret, r.body),
        "x-github-delivery": r.id ?? crypto.randomUUID(),
        "x-github-event": "push",
      };
    case "stripe":
      return {
        // The async form: under vitest, stripe resolves to its Web Crypto build.
        "stripe-signature": await stripe.webhooks.generateTestHeaderStringAsync({
          payload: r.body,
          secret: r.secret,
          timestamp: ts,
        }),
      };
    case "slack":
      return {
        "x-slack-request-timestamp": String(ts),
        "x-slack-signature": `v0=${hmac("sha256", `v0:${ts}:${r.body}`).digest("hex")}`,
      };
    case "standard-webhooks": {
      const id = r.id ?? `msg_${crypto.randomUUID()}`;
      return {
        "webhook-id": id,
        "webhook-timestamp": String(ts),
        "webhook-signature": new Webhook(r.secret).sign(id, new Date(ts * 1000), r.body),
      };
    }
    case "shopify":
      return {
        "x-shopify-hmac-sha256": hmac("sha256", r.body).digest("base64"),
        "x-shopify-webhook-id": r.id ?? crypto.randomUUID(),
      };
    case "linear":
      return {
        "linear-signature": hmac("sha256", r.body).digest("hex"),
        "linear-delivery": r.id ?? crypto.randomUUID(),
      };
    case "twilio": {
      const url = r.url ?? "";
      const form = (r.contentType ?? "").startsWith("application/x-www-form-urlencoded");
      // Form fields as twilio-node's webhook helpers receive them: a repeated key as an array.
      const params: Record<string, string | string[]> = {};
      if (form) {
        for (const [k, v] of new URLSearchParams(r.body)) {
          const prev = params[k];
          params[k] = prev === undefined ? v : Array.isArray(prev) ? [...prev, v] : [prev, v];
        }
      }
      const signedUrl = form
        ? url
        : `${url}${url.includes("?") ? "&" : "?"}bodySHA256=${twilio.getExpectedBodyHash(r.body)}`;
      return {
        "x-twilio-signature": twilio.getExpectedTwilioSignature(r.secret, signedUrl, params),
        "i-twilio-idempotency-token": r.id ?? crypto.randomUUID(),
        "x-signed-url": signedUrl,
      };
    }
    case "discord": {
      const key = r.otherKey ? generateKeyPairSync("ed25519").privateKey : discordKey;
      const sig = edSign(null, Buffer.from(`${ts}${r.body}`, "utf8"), key);
      return { "x-signature-ed25519": sig.toString("hex"), "x-signature-timestamp": String(ts) };
    }
    case "hmac": {
      const h = r.hmac ?? { header: "x-signature" };
      const digest = hmac(h.algorithm ?? "sha256", r.body).digest(h.encoding ?? "hex");
      return { [h.header]: `${h.prefix ?? ""}${digest}` };
    }
    default:
      throw new Error(`unknown scheme ${r.scheme}`);
  }
}

export async function startSigner(): Promise<{
  port: number;
  discordPublicKey: string;
  close(): Promise<void>;
}> {
  const { privateKey, publicKey } = generateKeyPairSync("ed25519");
  // The raw 32-byte key is the tail of its SPKI encoding.
  const discordPublicKey = publicKey.export({ format: "der", type: "spki" }).subarray(-32).toString("hex");
  const server = createServer((req, res) => {
    let text = "";
    req.on("data", (c: Buffer) => {
      text += c.toString("utf8");
    });
    req.on("end", async () => {
      try {
        if (req.method === "POST" && req.url === "/sign") {
          const headers = await signDelivery(JSON.parse(text) as SignRequest, privateKey);
          res.writeHead(200, { "content-type": "application/json" });
          res.end(JSON.stringify({ headers }));
          return;
        }
        res.writeHead(404).end();
      } catch (e) {
        res.writeHead(500, { "content-type": "text/plain" }).end(String(e));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    port,
    discordPublicKey,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
