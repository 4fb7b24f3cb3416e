/**
 * The webhook target's Standard Webhooks verifier is the oracle the signing tests trust, so it
 * is checked here against the reference example published with the specification.
 */
import { describe, expect, it } from "vitest";
import { verifyStandardWebhook } from "../servers/webhook-target.ts";

const SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const BODY = '{"test": 2432232314}';
const HEADERS = {
  "webhook-id": "msg_p5jXN8AQM9LWM0D4loKWxJek",
  "webhook-timestamp": "1614265330",
  "webhook-signature": "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
};
const AT = 1614265330;

describe("verifyStandardWebhook", () => {
  it("accepts the reference example", () => {
    expect(verifyStandardWebhook(SECRET, HEADERS, BODY, AT)).toEqual({ ok: true });
  });

  it("accepts when one of several space-separated signatures matches", () => {
    const headers = { ...HEADERS, "webhook-signature": `v1,Zm9v ${HEADERS["webhook-signature"]}` };
    expect(verifyStandardWebhook(SECRET, headers, BODY, AT).ok).toBe(true);
  });

  it("rejects a changed body", () => {
    expect(verifyStandardWebhook(SECRET, HEADERS, '{"test": 1}', AT).ok).toBe(false);
  });

  it("rejects another secret", () => {
    expect(verifyStandardWebhook("whsec_b3RoZXIta2V5", HEADERS, BODY, AT).ok).toBe(false);
  });

  it("rejects a timestamp outside the five-minute tolerance", () => {
    expect(verifyStandardWebhook(SECRET, HEADERS, BODY, AT + 301).ok).toBe(false);
  });

  it("rejects a request without the headers", () => {
    expect(verifyStandardWebhook(SECRET, {}, BODY, AT).ok).toBe(false);
  });
});
