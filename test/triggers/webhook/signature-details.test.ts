/**
 * What each signature verifier (src/triggers/webhook/schemes.ts) reads besides the signature, and
 * what it ignores, pinned one behaviour each: the encodings it takes, the header items it skips,
 * the content types Twilio signs, the URL forms it tries, the metadata the OpenAPI document
 * shows, and how verifySignature (signature.ts) words what it refuses and what is misconfigured.
 */
import { createHmac, sign as edSign, generateKeyPairSync } from "node:crypto";
import { describe, expect, it } from "vitest";
import type { SignatureAuth, SignatureScheme } from "../../../src/bundle.ts";
import { base64Bytes, type Delivery, hexBytes, SCHEMES } from "../../../src/triggers/webhook/schemes.ts";
import { deliveryId, schemeKeys, verifySignature } from "../../../src/triggers/webhook/signature.ts";
import { signDelivery } from "../../servers/signer.ts";

const T = 1_790_000_000;
const enc = (s: string) => new TextEncoder().encode(s) as Uint8Array<ArrayBuffer>;
const hmacHex = (key: string, data: string, alg = "sha256") =>
  createHmac(alg, key).update(data).digest("hex");
const hmacB64 = (key: string, data: string, alg = "sha256") =>
  createHmac(alg, key).update(data).digest("base64");

function auth(scheme: SignatureScheme, over: Partial<SignatureAuth> = {}): SignatureAuth {
  return { scheme, secretEnvs: ["S1"], toleranceS: 300, hmac: null, url: null, publicKey: null, ...over };
}

function delivery(
  body: string,
  headers: Record<string, string>,
  url = "https://flows.example.com/invoke/x",
  nowS = T,
): Delivery {
  return { body: enc(body), headers: new Headers(headers), url, now: nowS * 1000 };
}

describe("hex and base64 as the schemes read them", () => {
  it("reads hex of even length, any case, and nothing else", () => {
    expect([...(hexBytes("00ff10Ab") ?? [])]).toEqual([0, 255, 16, 171]);
    for (const bad of ["", "abc", "zz", " 00", "00 ", "0x00", "00g0"]) expect(hexBytes(bad), bad).toBeNull();
  });

  it("reads padded base64 and nothing else", () => {
    expect([...(base64Bytes("AAEC/w==") ?? [])]).toEqual([0, 1, 2, 255]);
    expect([...(base64Bytes("+/+/") ?? [])]).toEqual([251, 255, 191]);
    for (const bad of ["", "AAE", "AAEC=", "AA-_", " AAE", "AAE ", "A===", "AAEC====", "AB=C"]) {
      expect(base64Bytes(bad), bad).toBeNull();
    }
  });
});

describe("stripe", () => {
  const secret = "whsec_stripe_1234";
  const body = '{"id":"evt_1"}';
  const sig = hmacHex(secret, `${T}.${body}`);
  const verify = (header: string) =>
    SCHEMES.stripe.verify(auth("stripe"), [secret], delivery(body, { "stripe-signature": header }));

  it("reads its items with spaces around them, skips items it does not know", async () => {
    expect(await verify(`t=${T}, v1=${sig}`)).toBe(true);
    expect(await verify(`t=${T},v1=${sig},tX,v0=abcd`)).toBe(true);
    expect(await verify(`t=${T},v1=nothex,v1=${sig}`)).toBe(true);
    expect(await verify(`t= ${T},v1= ${sig}`)).toBe(true);
  });

  it("takes the signature only as v1, with a t, and a t only as t", async () => {
    expect(await verify(`t=${T},v0=${sig}`)).toBe(false);
    expect(await verify(`v1=${sig}`)).toBe(false);
    expect(await verify(`t=${T}`)).toBe(false);
    expect(await verify(`t=${T},v1=nothex`)).toBe(false);
    expect(await verify(`ts=${T},v1=${sig}`)).toBe(false);
  });
});

describe("slack", () => {
  const secret = "slack-secret-1234";
  const body = '{"event_id":"Ev1"}';
  const sig = hmacHex(secret, `v0:${T}:${body}`);
  const verify = (headers: Record<string, string>, nowS = T) =>
    SCHEMES.slack.verify(auth("slack"), [secret], delivery(body, headers, undefined, nowS));

  it("takes the signature only after `v0=`", async () => {
    expect(await verify({ "x-slack-signature": `v0=${sig}`, "x-slack-request-timestamp": String(T) })).toBe(
      true,
    );
    expect(await verify({ "x-slack-signature": `x0=${sig}`, "x-slack-request-timestamp": String(T) })).toBe(
      false,
    );
    expect(await verify({ "x-slack-signature": sig, "x-slack-request-timestamp": String(T) })).toBe(false);
  });

  it("refuses a timestamp that is missing, too long, or not digits", async () => {
    for (const ts of [undefined, "1".repeat(13), "12a", "-1"]) {
      const headers: Record<string, string> = { "x-slack-signature": `v0=${sig}` };
      if (ts !== undefined) headers["x-slack-request-timestamp"] = ts;
      expect(await verify(headers), String(ts)).toBe(false);
    }
  });

  it("refuses a timestamp that is not plain digits even when the signature covers it as written", async () => {
    // Each reads as a number near now to JavaScript; only digits are a timestamp.
    for (const ts of [`${T}.0`, `+${T}`, `${T}e0`, `0x${T.toString(16)}`, "12a", "1".repeat(13)]) {
      const signed = hmacHex(secret, `v0:${ts}:${body}`);
      expect(await verify({ "x-slack-signature": `v0=${signed}`, "x-slack-request-timestamp": ts }), ts).toBe(
        false,
      );
    }
  });
});

describe("standard webhooks", () => {
  const secret = "whsec_c3RhbmRhcmQta2V5LTEyMzQ=";
  const body = '{"type":"a"}';
  const headersOf = async (over: Record<string, string> = {}) => ({
    ...(await signDelivery(
      { scheme: "standard-webhooks", secret, body, timestamp: T, id: "msg_1" },
      generateKeyPairSync("ed25519").privateKey,
    )),
    ...over,
  });
  const verify = async (h: Record<string, string>) =>
    SCHEMES["standard-webhooks"].verify(auth("standard-webhooks"), [secret], delivery(body, h));

  it("takes any v1 of several space-separated signatures, skipping other versions and bad base64", async () => {
    const h = await headersOf();
    const good = h["webhook-signature"] as string;
    expect(await verify({ ...h, "webhook-signature": `v1a,xyz v1,!!!! ${good}` })).toBe(true);
    expect(await verify({ ...h, "webhook-signature": good.replace(/^v1,/, "v2,") })).toBe(false);
  });

  it("refuses a delivery without its webhook-id", async () => {
    const h = await headersOf();
    delete (h as Record<string, string>)["webhook-id"];
    expect(await verify(h)).toBe(false);
    // Even one signed over what a missing id would read as.
    const signedNull = await headersOf();
    const forNull = await signDelivery(
      { scheme: "standard-webhooks", secret, body, timestamp: T, id: "null" },
      generateKeyPairSync("ed25519").privateKey,
    );
    const { "webhook-id": _id, ...withoutId } = { ...signedNull, ...forNull };
    expect(await verify(withoutId)).toBe(false);
  });

  it("says what a secret must look like when it cannot be a key", async () => {
    const h = await headersOf();
    const err = await verifySignature(auth("standard-webhooks"), delivery(body, h), {
      S1: "not a key!",
    }).catch((e) => e);
    expect(err).toMatchObject({
      code: "server_misconfigured",
      message: "a standard-webhooks secret must be whsec_<base64 key>",
    });
  });
});

describe("linear", () => {
  const secret = "lin_wh_1234";
  const verify = (body: string) =>
    SCHEMES.linear.verify(
      auth("linear"),
      [secret],
      delivery(body, { "linear-signature": hmacHex(secret, body) }),
    );

  it("refuses a webhookTimestamp that is not a finite number", async () => {
    expect(await verify(`{"webhookTimestamp":${T * 1000}}`)).toBe(true);
    expect(await verify(`{"webhookTimestamp":"${T * 1000}"}`)).toBe(false);
    expect(await verify('{"webhookTimestamp":1e400}')).toBe(false);
    // A number, but stale: more than the tolerance (300 s) away either way.
    expect(await verify(`{"webhookTimestamp":${(T - 301) * 1000}}`)).toBe(false);
    expect(await verify(`{"webhookTimestamp":${(T + 301) * 1000}}`)).toBe(false);
    expect(await verify("not json")).toBe(false);
  });
});

describe("twilio", () => {
  const secret = "twilio-token-1234";
  const url = "https://flows.example.com/invoke/sms";
  const verify = (d: Delivery, configured: string | null = null) =>
    SCHEMES.twilio.verify(auth("twilio", { url: configured }), [secret], d);

  it("refuses a body it cannot tell the fields of, even signed over the URL alone", async () => {
    const sig = hmacB64(secret, url, "sha1");
    expect(
      await verify(delivery("hello", { "x-twilio-signature": sig, "content-type": "text/plain" }, url)),
    ).toBe(false);
    // Nor with the body's true SHA-256 in the URL: only a JSON body is covered that way.
    const hash = (await import("node:crypto")).createHash("sha256").update("hello").digest("hex");
    const signed = `${url}?bodySHA256=${hash}`;
    expect(
      await verify(
        delivery(
          "hello",
          { "x-twilio-signature": hmacB64(secret, signed, "sha1"), "content-type": "text/plain" },
          signed,
        ),
      ),
    ).toBe(false);
  });

  it("tries a configured URL that writes its default port without it, too", async () => {
    const form = "Body=hi";
    const headers = (sig: string) => ({
      "x-twilio-signature": sig,
      "content-type": "application/x-www-form-urlencoded",
    });
    const sig = hmacB64(secret, "https://public.example.com/smsBodyhi", "sha1");
    expect(await verify(delivery(form, headers(sig), url), "https://public.example.com:443/sms")).toBe(true);
    const sig80 = hmacB64(secret, "http://public.example.com/smsBodyhi", "sha1");
    expect(await verify(delivery(form, headers(sig80), url), "http://public.example.com:80/sms")).toBe(true);
  });

  it("checks a JSON body's whole SHA-256 against bodySHA256, and refuses a body it was not signed with", async () => {
    const body = '{"a":1}';
    const hash = createHmac("sha256", "").update("").digest("hex"); // not the body's: a decoy of the right size
    const real = (await import("node:crypto")).createHash("sha256").update(body).digest("hex");
    for (const [claimed, ok] of [
      [real, true],
      [real.slice(0, 32), false],
      [hash, false],
      ["zz", false],
    ] as const) {
      const signed = `${url}?bodySHA256=${claimed}`;
      const sig = hmacB64(secret, signed, "sha1");
      const d = delivery(body, { "x-twilio-signature": sig, "content-type": "application/json" }, signed);
      expect(await verify(d), claimed).toBe(ok);
    }
    const noHash = delivery(
      body,
      { "x-twilio-signature": hmacB64(secret, url, "sha1"), "content-type": "application/json" },
      url,
    );
    expect(await verify(noHash)).toBe(false);
  });

  it("tries the URL with its default port written out and without it, and a URL with another port as it is", async () => {
    const form = "Body=hi";
    const withPort = "https://flows.example.com:443/invoke/sms";
    const sig = hmacB64(secret, `${withPort}Bodyhi`, "sha1");
    expect(
      await verify(
        delivery(
          form,
          { "x-twilio-signature": sig, "content-type": "application/x-www-form-urlencoded" },
          url,
        ),
      ),
    ).toBe(true);
    const plain = "http://flows.example.com:80/invoke/sms";
    const sig80 = hmacB64(secret, `${plain}Bodyhi`, "sha1");
    expect(
      await verify(
        delivery(
          form,
          { "x-twilio-signature": sig80, "content-type": "application/x-www-form-urlencoded" },
          "http://flows.example.com/invoke/sms",
        ),
      ),
    ).toBe(true);
    const other = "https://flows.example.com:8443/invoke/sms";
    const sigOther = hmacB64(secret, `${other}Bodyhi`, "sha1");
    expect(
      await verify(
        delivery(
          form,
          { "x-twilio-signature": sigOther, "content-type": "application/x-www-form-urlencoded" },
          other,
        ),
      ),
    ).toBe(true);
    const upper = "HTTPS://flows.example.com/invoke/sms";
    const sigUpper = hmacB64(secret, `HTTPS://flows.example.com:443/invoke/smsBodyhi`, "sha1");
    expect(
      await verify(
        delivery(
          form,
          { "x-twilio-signature": sigUpper, "content-type": "application/x-www-form-urlencoded" },
          upper,
        ),
      ),
    ).toBe(true);
  });

  it("signs the URL configured at Twilio, with the request's query unless it has its own", async () => {
    const form = "Body=hi";
    const configured = "https://public.example.com/sms";
    const seen = "https://worker.internal/invoke/sms?a=1";
    const withQuery = hmacB64(secret, `${configured}?a=1Bodyhi`, "sha1");
    const headers = (sig: string) => ({
      "x-twilio-signature": sig,
      "content-type": "application/x-www-form-urlencoded",
    });
    expect(await verify(delivery(form, headers(withQuery), seen), configured)).toBe(true);
    const own = `${configured}?b=2`;
    expect(await verify(delivery(form, headers(hmacB64(secret, `${own}Bodyhi`, "sha1")), seen), own)).toBe(
      true,
    );
    expect(await verify(delivery(form, headers(withQuery), seen), own)).toBe(false);
  });
});

describe("discord", () => {
  const { privateKey, publicKey } = generateKeyPairSync("ed25519");
  const hex = publicKey.export({ format: "der", type: "spki" }).subarray(-32).toString("hex");
  const body = '{"type":1}';
  const sig = edSign(null, Buffer.from(`${T}${body}`), privateKey).toString("hex");

  it("refuses a signature that is not 64 bytes", async () => {
    const d = (s: string) => delivery(body, { "x-signature-ed25519": s, "x-signature-timestamp": String(T) });
    const a = auth("discord", { secretEnvs: [], publicKey: { hex } });
    expect(await SCHEMES.discord.verify(a, [hex], d(sig))).toBe(true);
    expect(await SCHEMES.discord.verify(a, [hex], d(sig.slice(0, 126)))).toBe(false);
    expect(await SCHEMES.discord.verify(a, [hex], d(`${sig}00`))).toBe(false);
  });

  it("reads its public key from the env var the file names, and says so when it is unset or not a key", async () => {
    const a = auth("discord", { secretEnvs: [], publicKey: { env: "DISCORD_PK" } });
    const d = delivery(body, { "x-signature-ed25519": sig, "x-signature-timestamp": String(T) });
    await expect(verifySignature(a, d, { DISCORD_PK: hex })).resolves.toBeUndefined();
    await expect(verifySignature(a, d, {})).rejects.toMatchObject({
      code: "server_misconfigured",
      message: expect.stringContaining("public key of this workflow is not configured (set DISCORD_PK"),
    });
    for (const notAKey of ["ab", "not hex at all", "zz".repeat(32)]) {
      await expect(verifySignature(a, d, { DISCORD_PK: notAKey }), notAKey).rejects.toMatchObject({
        code: "server_misconfigured",
        message: "a discord public key is 64 hex digits",
      });
    }
    expect(schemeKeys(auth("discord", { secretEnvs: [], publicKey: { hex } }), {})).toEqual([hex]);
    // No key named at all: nothing to check against, so every delivery is refused.
    expect(schemeKeys(auth("discord", { secretEnvs: [], publicKey: null }), {})).toEqual([]);
  });

  it("names an unset signing secret of any other scheme as the signing secret", async () => {
    const a = auth("github", { secretEnvs: ["GH_SECRET"] });
    await expect(verifySignature(a, delivery("{}", {}), {})).rejects.toMatchObject({
      code: "server_misconfigured",
      message: expect.stringContaining(
        "the signing secret of this workflow is not configured (set GH_SECRET",
      ),
    });
  });
});

describe("github", () => {
  it("refuses a signature that is not hex, without an error", async () => {
    const d = delivery("{}", { "x-hub-signature-256": "sha256=zz" });
    expect(await SCHEMES.github.verify(auth("github"), ["gh-secret-1234"], d)).toBe(false);
  });
});

describe("hmac", () => {
  it("refuses when the workflow gives no hmac settings, and answers 401 when its hash cannot be used", async () => {
    const body = "x";
    const d = delivery(body, { "x-sig": hmacHex("k", body) });
    expect(await SCHEMES.hmac.verify(auth("hmac", { hmac: null }), ["k"], d)).toBe(false);
    const odd = auth("hmac", {
      hmac: { header: "x-sig", prefix: "", algorithm: "md5" as "sha1", encoding: "hex" },
    });
    await expect(verifySignature(odd, d, { S1: "k" })).rejects.toMatchObject({
      status: 401,
      code: "unauthorized",
    });
  });
});

describe("delivery ids", () => {
  it("takes a delivery id of exactly 255 characters, not 256", () => {
    const gh = auth("github");
    expect(deliveryId(gh, new Headers({ "x-github-delivery": "x".repeat(255) }), {})).toBe("x".repeat(255));
    expect(deliveryId(gh, new Headers({ "x-github-delivery": "x".repeat(256) }), {})).toBeNull();
  });
});

describe("what the OpenAPI document says each sender sends", () => {
  const senders: Array<[SignatureScheme, string]> = [
    ["github", "x-github-event"],
    ["stripe", ""],
    ["slack", ""],
    ["standard-webhooks", ""],
    ["shopify", ""],
    ["linear", ""],
    ["twilio", "x-signed-url"],
    ["discord", ""],
  ];

  it.each(senders)("%s: the headers its sender's own library sets, each described", async (scheme, extra) => {
    const sent = await signDelivery(
      {
        scheme,
        secret: scheme === "standard-webhooks" ? "whsec_c3RhbmRhcmQta2V5LTEyMzQ=" : "secret-1234",
        body: '{"id":"evt_1","event_id":"Ev1"}',
        url: "https://x.example/h",
        contentType: "application/json",
      },
      generateKeyPairSync("ed25519").privateKey,
    );
    const documented = SCHEMES[scheme].headers;
    expect(documented.map(([name]) => name.toLowerCase()).sort()).toEqual(
      Object.keys(sent)
        .filter((h) => h !== extra)
        .sort(),
    );
    for (const [, meaning] of documented) expect(meaning.length).toBeGreaterThan(10);
  });

  it("hmac: names no header of its own (the workflow names it)", () => {
    expect(SCHEMES.hmac.headers).toEqual([]);
    expect(SCHEMES.hmac.deliveryId).toBeNull();
  });

  it.each([
    ["github", { header: "x-github-delivery" }],
    ["stripe", { bodyField: "id" }],
    ["slack", { bodyField: "event_id" }],
    ["standard-webhooks", { header: "webhook-id" }],
    ["shopify", { header: "x-shopify-webhook-id" }],
    ["linear", { header: "linear-delivery" }],
    ["twilio", { header: "i-twilio-idempotency-token" }],
    ["discord", { bodyField: "id" }],
  ] as const)("%s: reads the delivery id where its sender repeats it", async (scheme, where) => {
    const sent = await signDelivery(
      {
        scheme,
        secret: scheme === "standard-webhooks" ? "whsec_c3RhbmRhcmQta2V5LTEyMzQ=" : "secret-1234",
        body: "{}",
        id: "delivery-7",
        url: "https://x.example/h",
        contentType: "application/json",
      },
      generateKeyPairSync("ed25519").privateKey,
    );
    expect(SCHEMES[scheme].deliveryId).toEqual(where);
    const params = { id: "delivery-7", event_id: "delivery-7" };
    const got = deliveryId(auth(scheme), new Headers(sent), "header" in where ? {} : params);
    expect(got).toBe("delivery-7");
  });
});
