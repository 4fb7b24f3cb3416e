/**
 * Every signature scheme's verifier (src/triggers/webhook/schemes.ts) in Node, against deliveries
 * signed by the senders' own libraries (test/servers/signer.ts): a valid delivery is taken, and
 * one changed anywhere (body, signature, its encoding, a header, the secret, a timestamp one second
 * past the tolerance either way) is refused; any of several secrets verifies (rotation); a secret
 * that cannot be a key is a configuration error, never a refusal that hides it. The Worker-level
 * test (triggers-signatures.workerd.test.ts) sends the same deliveries through HTTP.
 */
import { describe, expect, it } from "vitest";
import { HttpProblem } from "../../../src/common/problem.ts";
import { deliveryId, verifySignature } from "../../../src/triggers/webhook/signature.ts";
import {
  authOf,
  delivery,
  SCHEMES_UNDER_TEST,
  type Scheme,
  signed,
  T,
  URL_SEEN,
  verify,
} from "./signature-cases.ts";

describe.each(SCHEMES_UNDER_TEST)("the $scheme scheme", (s) => {
  it("takes a delivery its sender signed", async () => {
    expect(await verify(s, delivery(await signed(s)))).toBe(true);
  });

  it("refuses the same delivery with one byte of the body changed", async () => {
    const d = await signed(s);
    for (const at of [0, Math.floor(d.body.length / 2), d.body.length - 1]) {
      const body =
        d.body.slice(0, at) + String.fromCharCode(d.body.charCodeAt(at) ^ 1) + d.body.slice(at + 1);
      expect(await verify(s, delivery({ ...d, body })), `byte ${at}`).toBe(false);
    }
  });

  it("refuses a signature with one character changed, and one without its header", async () => {
    const d = await signed(s);
    const value = d.headers.get(s.signature) as string;
    const at = value.length - 3;
    const flipped = value.slice(0, at) + (value[at] === "a" ? "b" : "a") + value.slice(at + 1);
    const changed = new Headers(d.headers);
    changed.set(s.signature, flipped);
    expect(await verify(s, delivery({ ...d, headers: changed }))).toBe(false);
    const missing = new Headers(d.headers);
    missing.delete(s.signature);
    expect(await verify(s, delivery({ ...d, headers: missing }))).toBe(false);
  });

  if (s.scheme !== "discord") {
    it("refuses a delivery signed with another secret, and takes it when that secret is one of the workflow's", async () => {
      const d = delivery(await signed(s, { secret: s.other }));
      expect(await verify(s, d)).toBe(false);
      expect(await verify(s, d, [s.secret, s.other])).toBe(true);
    });
  }

  if (s.timed) {
    it("takes a delivery signed up to the tolerance away either way, and refuses one a second past it", async () => {
      const d = await signed(s);
      expect(await verify(s, delivery(d, T + 300))).toBe(true);
      expect(await verify(s, delivery(d, T - 300))).toBe(true);
      expect(await verify(s, { ...delivery(d), now: (T + 300) * 1000 + 1 })).toBe(false);
      expect(await verify(s, { ...delivery(d), now: (T - 300) * 1000 - 1 })).toBe(false);
    });
  } else {
    it("signs no time: the same delivery verifies a day later", async () => {
      expect(await verify(s, delivery(await signed(s), T + 86_400))).toBe(true);
    });
  }
});

describe("what the schemes read besides the signature", () => {
  const stripe = SCHEMES_UNDER_TEST.find((s) => s.scheme === "stripe") as Scheme;
  const slack = SCHEMES_UNDER_TEST.find((s) => s.scheme === "slack") as Scheme;
  const stdwh = SCHEMES_UNDER_TEST.find((s) => s.scheme === "standard-webhooks") as Scheme;
  const twilio = SCHEMES_UNDER_TEST.find((s) => s.scheme === "twilio") as Scheme;
  const linear = SCHEMES_UNDER_TEST.find((s) => s.scheme === "linear") as Scheme;

  it("stripe: takes any v1 of several (a rolled secret), and refuses a header without t=", async () => {
    const d = await signed(stripe);
    const header = d.headers.get("stripe-signature") as string;
    const v1 = /v1=([0-9a-f]+)/.exec(header)?.[1] as string;
    const rolled = new Headers(d.headers);
    rolled.set("stripe-signature", `t=${T},v1=${"0".repeat(64)},v1=${v1}`);
    expect(await verify(stripe, delivery({ ...d, headers: rolled }))).toBe(true);
    const noTime = new Headers(d.headers);
    noTime.set("stripe-signature", `v1=${v1}`);
    expect(await verify(stripe, delivery({ ...d, headers: noTime }))).toBe(false);
    const otherTime = new Headers(d.headers);
    otherTime.set("stripe-signature", `t=${T + 1},v1=${v1}`);
    expect(await verify(stripe, delivery({ ...d, headers: otherTime }))).toBe(false);
  });

  it("slack: refuses the signature under another timestamp, or a timestamp that is not a number", async () => {
    const d = await signed(slack);
    for (const ts of [String(T + 1), "soon", ""]) {
      const h = new Headers(d.headers);
      h.set("x-slack-request-timestamp", ts);
      expect(await verify(slack, delivery({ ...d, headers: h })), ts).toBe(false);
    }
  });

  it("standard webhooks: refuses another webhook-id, and a secret that is not whsec_<base64> is a configuration error", async () => {
    const d = await signed(stdwh);
    const h = new Headers(d.headers);
    h.set("webhook-id", "delivery-2");
    expect(await verify(stdwh, delivery({ ...d, headers: h }))).toBe(false);
    const env = { S1: "not-a-whsec-key!" };
    await expect(verifySignature(authOf(stdwh), delivery(d), env)).rejects.toMatchObject({
      code: "server_misconfigured",
    });
  });

  it("twilio: takes repeated form fields in any order, refuses an added field, and checks a JSON body's hash", async () => {
    const d = await signed(twilio);
    const reordered = "MediaUrl=a&From=%2B15550001111&MediaUrl=b&Body=hi";
    expect(await verify(twilio, delivery({ ...d, body: reordered }))).toBe(true);
    expect(await verify(twilio, delivery({ ...d, body: `${d.body}&Extra=1` }))).toBe(false);
    const json = { ...twilio, contentType: "application/json", body: '{"a":1}' };
    const jd = await signed(json);
    expect(await verify(json, delivery(jd))).toBe(true);
    expect(await verify(json, delivery({ ...jd, body: '{"a":2}' }))).toBe(false);
    const plain = new Headers(d.headers);
    plain.set("content-type", "text/plain");
    expect(await verify(twilio, delivery({ ...d, headers: plain }))).toBe(false);
  });

  it("twilio: takes the URL signed with or without its default port", async () => {
    const withPort = await signed(twilio, { url: "https://flows.example.com:443/invoke/sms?x=1" });
    expect(await verify(twilio, delivery({ ...withPort, url: URL_SEEN }))).toBe(true);
  });

  it("linear: refuses a signed body whose webhookTimestamp is stale or missing", async () => {
    const stale = await signed(linear, { body: `{"webhookTimestamp":${(T - 301) * 1000}}` });
    expect(await verify(linear, delivery(stale))).toBe(false);
    const none = await signed(linear, { body: '{"n":1}' });
    expect(await verify(linear, delivery(none))).toBe(false);
  });

  it("discord: refuses a delivery signed by another key, and a public key that is not 32 bytes is a configuration error", async () => {
    const discord = SCHEMES_UNDER_TEST.find((s) => s.scheme === "discord") as Scheme;
    const d = delivery(await signed(discord, { otherKey: true }));
    expect(await verify(discord, d)).toBe(false);
    const auth = { ...authOf(discord), publicKey: { hex: "ab".repeat(31) } };
    await expect(verifySignature(auth, delivery(await signed(discord)), {})).rejects.toMatchObject({
      code: "server_misconfigured",
    });
  });
});

describe("verifySignature", () => {
  const github = SCHEMES_UNDER_TEST[0] as Scheme;

  it("answers every refusal with the same 401, whatever was wrong", async () => {
    const d = await signed(github);
    const errors: HttpProblem[] = [];
    for (const env of [{ S1: github.other }, { S1: `${github.secret}x` }]) {
      errors.push(
        await verifySignature(authOf(github), delivery({ ...d, body: `${d.body} ` }), env).catch((e) => e),
      );
      errors.push(await verifySignature(authOf(github), delivery(d), env).catch((e) => e));
    }
    for (const e of errors) {
      expect(e).toBeInstanceOf(HttpProblem);
      expect({ status: e.status, code: e.code, message: e.message }).toEqual({
        status: 401,
        code: "unauthorized",
        message: "missing or invalid credentials",
      });
    }
  });

  it("fails closed with 500 when the workflow's secret is not set", async () => {
    await expect(verifySignature(authOf(github), delivery(await signed(github)), {})).rejects.toMatchObject({
      code: "server_misconfigured",
    });
  });

  it("takes a valid delivery", async () => {
    await expect(
      verifySignature(authOf(github), delivery(await signed(github)), { S1: github.secret }),
    ).resolves.toBeUndefined();
  });
});

describe("the delivery id a sender repeats", () => {
  it("is read from the scheme's header or body field, and only when 1 to 255 characters", () => {
    const gh = authOf(SCHEMES_UNDER_TEST[0] as Scheme);
    const stripe = authOf(SCHEMES_UNDER_TEST[1] as Scheme);
    const hmac = authOf(SCHEMES_UNDER_TEST.find((s) => s.scheme === "hmac") as Scheme);
    expect(deliveryId(gh, new Headers({ "x-github-delivery": "abc" }), {})).toBe("abc");
    expect(deliveryId(gh, new Headers({ "x-github-delivery": "x".repeat(256) }), {})).toBeNull();
    expect(deliveryId(gh, new Headers(), {})).toBeNull();
    expect(deliveryId(stripe, new Headers(), { id: "evt_1" })).toBe("evt_1");
    expect(deliveryId(stripe, new Headers(), { id: 42 })).toBe("42");
    expect(deliveryId(stripe, new Headers(), { id: "" })).toBeNull();
    expect(deliveryId(hmac, new Headers({ "x-github-delivery": "abc" }), { id: "1" })).toBeNull();
  });
});
