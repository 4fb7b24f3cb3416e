/**
 * Standard Webhooks signing (src/common/standard-webhooks.ts), which webhook steps, notifications
 * and approval requests use: it reproduces the specification's published example and the
 * `standardwebhooks` library (the receivers' own verifier) accepts what it signs.
 */
import { Webhook } from "standardwebhooks";
import { describe, expect, it } from "vitest";
import {
  importSigningKey,
  signStandardWebhook,
  standardWebhookHeaders,
} from "../../src/common/standard-webhooks.ts";

// The example published with the specification (standardwebhooks.com).
const SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const ID = "msg_p5jXN8AQM9LWM0D4loKWxJek";
const TIMESTAMP = "1614265330";
const BODY = '{"test": 2432232314}';

describe("Standard Webhooks signing", () => {
  it("gives the specification's example its published signature", async () => {
    const key = await importSigningKey(SECRET);
    expect(await signStandardWebhook(key, ID, TIMESTAMP, BODY)).toBe(
      "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
    );
  });

  it("signs headers the standardwebhooks verifier accepts, with the timestamp of the attempt", async () => {
    const key = await importSigningKey(SECRET);
    const now = Date.now();
    const headers = Object.fromEntries(await standardWebhookHeaders(key, ID, now, BODY));
    expect(headers["webhook-timestamp"]).toBe(String(Math.floor(now / 1000)));
    expect(() => new Webhook(SECRET).verify(BODY, headers)).not.toThrow();
    expect(() => new Webhook(SECRET).verify(`${BODY} `, headers)).toThrow();
  });

  it("refuses a secret that holds no key", async () => {
    await expect(importSigningKey("whsec_")).rejects.toThrow(/whsec_<base64 key>/);
  });
});
