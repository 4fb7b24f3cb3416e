/**
 * Signed deliveries from real webhook senders (docs/triggers.md): each scheme's delivery is signed
 * by the sender's own library (or its documented recipe) in Node, then sent to the Worker in
 * workerd. Valid -> a run; tampered body, wrong secret, stale timestamp, missing header, wrong
 * encoding -> the same 401 every time; a redelivery reaches the same run.
 */
import { describe, expect, it } from "vitest";
import { call, waitForRun } from "../../worker/harness.ts";
import {
  base64ToHex,
  deliver,
  hexToBase64,
  SECRETS,
  type SignOptions,
  sign,
  UNAUTHORIZED,
} from "../../worker/signed.ts";

const now = () => Math.floor(Date.now() / 1000);

interface Case {
  workflow: string;
  scheme: string;
  secret: string;
  /** A body unique to this delivery; `ageS` makes a body-carried timestamp (Linear) that old. */
  body(ageS?: number): string;
  contentType?: string;
  /** The header that carries the signature (dropped for "missing header"). */
  signatureHeader: string;
  /** The same signature written in the wrong encoding. */
  misencode(value: string): string;
  /** How a stale delivery is made: an old signed timestamp, or null when the scheme signs none. */
  stale: ((o: SignOptions) => SignOptions) | null;
  /** The Worker-side URL Twilio signs; other schemes ignore it. */
  url?: string;
  /** Whether redeliveries carry an id (then they reach the same run). */
  delivers: boolean;
}

const uid = () => crypto.randomUUID();
const json = (v: unknown) => JSON.stringify(v);
// A minute past the tolerance either way: `now()` is whole seconds and the delivery takes its time
// to arrive, so one second past could still be inside it. The exact second is pinned against the
// verifier's own clock in signature-schemes.test.ts.
const old = (o: SignOptions): SignOptions => ({ ...o, timestamp: now() - 360 });

const CASES: Case[] = [
  {
    workflow: "trig-github",
    scheme: "github",
    secret: SECRETS.GITHUB_SECRET as string,
    body: () => json({ action: "opened", number: 7, nonce: uid() }),
    signatureHeader: "x-hub-signature-256",
    misencode: (v) => `sha256=${hexToBase64(v.slice(7))}`,
    stale: null,
    delivers: true,
  },
  {
    workflow: "trig-stripe",
    scheme: "stripe",
    secret: SECRETS.STRIPE_SECRET as string,
    body: () => json({ id: `evt_${uid()}`, type: "invoice.paid", data: { object: { amount: 1200 } } }),
    signatureHeader: "stripe-signature",
    misencode: (v) => v.replace(/v1=([0-9a-f]+)/, (_, hex: string) => `v1=${hexToBase64(hex)}`),
    stale: old,
    delivers: true,
  },
  {
    workflow: "trig-slack",
    scheme: "slack",
    secret: SECRETS.SLACK_SECRET as string,
    body: () => json({ type: "event_callback", event_id: `Ev${uid()}`, event: { type: "app_mention" } }),
    signatureHeader: "x-slack-signature",
    misencode: (v) => `v0=${hexToBase64(v.slice(3))}`,
    stale: old,
    delivers: true,
  },
  {
    workflow: "trig-standard-webhooks",
    scheme: "standard-webhooks",
    secret: SECRETS.STDWH_SECRET as string,
    body: () => json({ type: "email.sent", data: { to: "ada@example.com", nonce: uid() } }),
    signatureHeader: "webhook-signature",
    misencode: (v) => `v1,${base64ToHex(v.slice(3))}`,
    stale: old,
    delivers: true,
  },
  {
    workflow: "trig-shopify",
    scheme: "shopify",
    secret: SECRETS.SHOPIFY_SECRET as string,
    body: () => json({ id: 820982911946154500, email: "jon@example.com", nonce: uid() }),
    signatureHeader: "x-shopify-hmac-sha256",
    misencode: (v) => base64ToHex(v),
    stale: null,
    delivers: true,
  },
  {
    workflow: "trig-linear",
    scheme: "linear",
    secret: SECRETS.LINEAR_SECRET as string,
    body: (ageS = 0) =>
      json({
        action: "create",
        type: "Issue",
        data: { id: uid() },
        webhookTimestamp: Date.now() - ageS * 1000,
      }),
    signatureHeader: "linear-signature",
    misencode: (v) => hexToBase64(v),
    stale: null, // the timestamp is in the body: see its own test below
    delivers: true,
  },
  {
    workflow: "trig-twilio",
    scheme: "twilio",
    secret: SECRETS.TWILIO_SECRET as string,
    body: () =>
      new URLSearchParams({
        From: "+15005550006",
        To: "+15005550001",
        Body: `hello ${uid()}`,
        MessageSid: "SM1",
      }).toString(),
    contentType: "application/x-www-form-urlencoded",
    signatureHeader: "x-twilio-signature",
    misencode: (v) => base64ToHex(v),
    stale: null,
    url: "http://workflow.test/invoke/trig-twilio",
    delivers: true,
  },
  {
    workflow: "trig-discord",
    scheme: "discord",
    secret: "",
    body: () =>
      json({ id: `${Date.now()}${Math.floor(Math.random() * 1e6)}`, type: 2, data: { name: "ping" } }),
    signatureHeader: "x-signature-ed25519",
    misencode: (v) => hexToBase64(v),
    stale: old,
    delivers: true,
  },
  {
    workflow: "trig-hmac",
    scheme: "hmac",
    secret: SECRETS.HMAC_SECRET as string,
    body: () => json({ event: "order.created", nonce: uid() }),
    signatureHeader: "x-acme-signature",
    misencode: (v) => `sha512=${base64ToHex(v.slice(7))}`,
    stale: null,
    delivers: false,
  },
];

const HMAC = {
  header: "x-acme-signature",
  prefix: "sha512=",
  algorithm: "sha512",
  encoding: "base64" as const,
};

function options(c: Case, body: string, extra: Partial<SignOptions> = {}): SignOptions {
  return {
    scheme: c.scheme,
    secret: c.secret,
    body,
    url: c.url,
    contentType: c.contentType ?? "application/json",
    ...(c.scheme === "hmac" ? { hmac: HMAC } : {}),
    ...extra,
  };
}

async function send(c: Case, body: string, headers: Record<string, string>): Promise<Response> {
  return deliver(c.workflow, body, headers, { contentType: c.contentType });
}

/** The body with one letter changed (same length, still well-formed). */
function tamper(body: string): string {
  const i = body.search(/[a-w]/);
  return body.slice(0, i) + String.fromCharCode(body.charCodeAt(i) + 1) + body.slice(i + 1);
}

/** The run an accepted delivery started (202, or 200 from a workflow's invoke.response). */
async function accepted(res: Response): Promise<string> {
  expect([200, 202], await res.clone().text()).toContain(res.status);
  return (res.headers.get("location") ?? "").replace("/runs/", "");
}

async function expectRefused(res: Response, why: string): Promise<void> {
  expect(res.status, why).toBe(401);
  expect(res.headers.get("content-type")).toBe("application/problem+json");
  expect(await res.json(), why).toEqual(UNAUTHORIZED);
}

for (const c of CASES) {
  describe(`scheme ${c.scheme}`, () => {
    it("accepts a delivery signed by the sender and records its params", async () => {
      const body = c.body();
      const run_id = await accepted(await send(c, body, await sign(options(c, body))));
      const reader = c.scheme === "discord" ? `Bearer ${SECRETS.ADMIN_TOKEN}` : `Bearer ${c.secret}`;
      const envelope = await waitForRun(run_id, { authorization: reader });
      expect(envelope.status).toBe("complete");
      const expected =
        c.contentType === "application/x-www-form-urlencoded"
          ? Object.fromEntries(new URLSearchParams(body))
          : JSON.parse(body);
      expect(envelope.params).toEqual(expected);
    });

    it("refuses a tampered body", async () => {
      const body = c.body();
      const headers = await sign(options(c, body));
      const tampered = tamper(body);
      expect(tampered).not.toBe(body);
      await expectRefused(await send(c, tampered, headers), "tampered body");
    });

    it("refuses a delivery signed with another secret", async () => {
      const body = c.body();
      const other =
        c.scheme === "standard-webhooks"
          ? "whsec_b3RoZXIta2V5LW5vdC10aGUtcmlnaHQtb25l"
          : c.scheme === "stripe"
            ? "whsec_some_other_endpoint"
            : "a-different-secret-123";
      const headers = await sign(
        options(c, body, c.scheme === "discord" ? { otherKey: true } : { secret: other }),
      );
      await expectRefused(await send(c, body, headers), "wrong secret");
    });

    it("refuses a delivery without its signature header", async () => {
      const body = c.body();
      const headers = await sign(options(c, body));
      delete headers[c.signatureHeader];
      await expectRefused(await send(c, body, headers), "missing header");
    });

    it("refuses the right signature in the wrong encoding", async () => {
      const body = c.body();
      const headers = await sign(options(c, body));
      const value = headers[c.signatureHeader] as string;
      const wrong = c.misencode(value);
      expect(wrong).not.toBe(value);
      await expectRefused(await send(c, body, { ...headers, [c.signatureHeader]: wrong }), "wrong encoding");
    });

    if (c.stale) {
      const stale = c.stale;
      it("refuses a signed timestamp older than tolerance_s (300 s), and one as far ahead", async () => {
        const body = c.body();
        await expectRefused(await send(c, body, await sign(stale(options(c, body)))), "stale");
        const ahead = await sign({ ...options(c, body), timestamp: now() + 360 });
        await expectRefused(await send(c, body, ahead), "from the future");
        // Inside the window it is fine (a slow network, a clock a little off).
        const recent = await sign({ ...options(c, body), timestamp: now() - 250 });
        await accepted(await send(c, body, recent));
      });
    }

    if (c.delivers) {
      it("answers a redelivery with the same run instead of a second one", async () => {
        const body = c.body();
        const headers = await sign(options(c, body, { id: `delivery-${uid()}` }));
        const a = await accepted(await send(c, body, headers));
        const b = await accepted(await send(c, body, headers));
        expect(b).toBe(a);
        // Another delivery id: a new run, unless the id is in the (same) body.
        const f = await accepted(
          await send(c, body, await sign(options(c, body, { id: `delivery-${uid()}` }))),
        );
        if (["stripe", "slack", "discord"].includes(c.scheme)) expect(f).toBe(a);
        else expect(f).not.toBe(a);
      });
    }
  });
}

describe("scheme details", () => {
  it("stripe: a retry re-signed with a new timestamp reaches the same run (the event id)", async () => {
    const body = JSON.stringify({ id: `evt_${uid()}`, type: "charge.succeeded" });
    const secret = SECRETS.STRIPE_SECRET as string;
    const first = await deliver(
      "trig-stripe",
      body,
      await sign({ scheme: "stripe", secret, body, timestamp: now() - 60 }),
    );
    const retry = await deliver("trig-stripe", body, await sign({ scheme: "stripe", secret, body }));
    expect(first.status).toBe(202);
    expect(((await retry.json()) as { run_id: string }).run_id).toBe(
      ((await first.json()) as { run_id: string }).run_id,
    );
  });

  it("stripe: any v1 signature of several may match (Stripe sends one per active secret)", async () => {
    const body = JSON.stringify({ id: `evt_${uid()}` });
    const good = await sign({ scheme: "stripe", secret: SECRETS.STRIPE_SECRET as string, body });
    const bad = await sign({ scheme: "stripe", secret: "whsec_another_secret", body });
    const t = /t=(\d+)/.exec(good["stripe-signature"] as string)?.[1];
    const v1 = (h: Record<string, string>) => /v1=([0-9a-f]+)/.exec(h["stripe-signature"] as string)?.[1];
    const both = `t=${t},v1=${v1(bad)},v1=${v1(good)}`;
    expect((await deliver("trig-stripe", body, { "stripe-signature": both })).status).toBe(202);
  });

  it("linear: a body whose webhookTimestamp is older than tolerance_s is refused", async () => {
    const c = CASES.find((x) => x.scheme === "linear") as Case;
    const body = c.body(301);
    await expectRefused(await send(c, body, await sign(options(c, body))), "stale webhookTimestamp");
    const recent = c.body(200);
    expect((await send(c, recent, await sign(options(c, recent)))).status).toBe(202);
  });

  it("twilio: a JSON body is covered by bodySHA256 in the signed URL", async () => {
    const body = JSON.stringify({ event: "call.completed", sid: uid() });
    const secret = SECRETS.TWILIO_SECRET as string;
    const url = "http://workflow.test/invoke/trig-twilio";
    const headers = await sign({ scheme: "twilio", secret, body, url, contentType: "application/json" });
    const query = (headers["x-signed-url"] as string).slice(url.length);
    expect(query).toMatch(/^\?bodySHA256=[0-9a-f]{64}$/);
    expect((await deliver("trig-twilio", body, headers, { query })).status).toBe(202);
    // The same URL with another body: the hash no longer matches.
    await expectRefused(
      await deliver("trig-twilio", body.replace("call", "sms"), headers, { query }),
      "tampered JSON",
    );
  });

  it("twilio: repeated form fields are signed as Twilio's library signs them", async () => {
    const body = "To=%2B15005550001&MediaUrl=b&MediaUrl=a&Body=two+images";
    const secret = SECRETS.TWILIO_SECRET as string;
    const url = "http://workflow.test/invoke/trig-twilio";
    const headers = await sign({
      scheme: "twilio",
      secret,
      body,
      url,
      contentType: "application/x-www-form-urlencoded",
    });
    const res = await deliver("trig-twilio", body, headers, {
      contentType: "application/x-www-form-urlencoded",
    });
    expect(res.status).toBe(202);
  });

  it("twilio: `url` verifies against the public URL configured at Twilio", async () => {
    const body = new URLSearchParams({ From: "+15005550006", Body: uid() }).toString();
    const secret = SECRETS.TWILIO_SECRET as string;
    const form = { contentType: "application/x-www-form-urlencoded" };
    const publicUrl = await sign({
      scheme: "twilio",
      secret,
      body,
      url: "https://hooks.example.com/sms",
      ...form,
    });
    expect((await deliver("trig-twilio-url", body, publicUrl, form)).status).toBe(202);
    const seen = await sign({
      scheme: "twilio",
      secret,
      body,
      url: "http://workflow.test/invoke/trig-twilio-url",
      ...form,
    });
    await expectRefused(
      await deliver("trig-twilio-url", body, seen, form),
      "URL other than the configured one",
    );
  });

  it("discord: answers the PING handshake through invoke.response", async () => {
    const body = JSON.stringify({ id: `${Date.now()}1`, type: 1 });
    const res = await deliver("trig-discord", body, await sign({ scheme: "discord", body }));
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ type: 1 });
  });
});

describe("secret rotation", () => {
  it("github: a list of secrets accepts a delivery signed with any of them", async () => {
    for (const secret of [SECRETS.GITHUB_SECRET, SECRETS.GITHUB_SECRET_NEXT] as string[]) {
      const body = JSON.stringify({ zen: uid() });
      const res = await deliver("trig-github-rotation", body, await sign({ scheme: "github", secret, body }));
      expect(res.status).toBe(202);
    }
    const body = JSON.stringify({ zen: uid() });
    const other = await sign({ scheme: "github", secret: "neither-of-the-two", body });
    await expectRefused(await deliver("trig-github-rotation", body, other), "third secret");
  });

  it("hmac: either secret of the list verifies", async () => {
    for (const secret of [SECRETS.HMAC_SECRET, SECRETS.HMAC_SECRET_NEXT] as string[]) {
      const body = JSON.stringify({ n: uid() });
      const res = await deliver("trig-hmac", body, await sign({ scheme: "hmac", secret, body, hmac: HMAC }));
      expect(res.status).toBe(202);
    }
  });
});

describe("order of checks", () => {
  it("checks the 1 MiB limit before the signature (413, not 401)", async () => {
    const big = JSON.stringify({ pad: "x".repeat(1024 * 1024) });
    const res = await deliver("trig-github", big, { "x-hub-signature-256": "sha256=00" });
    expect(res.status).toBe(413);
  });

  it("verifies before parsing: a signed body that is not JSON is 400, an unsigned one 401", async () => {
    const body = "{not json";
    const signed = await sign({ scheme: "github", secret: SECRETS.GITHUB_SECRET as string, body });
    expect((await deliver("trig-github", body, signed)).status).toBe(400);
    await expectRefused(await deliver("trig-github", body, {}), "unsigned");
  });

  it("a signed body in an unsupported content type is 415", async () => {
    const body = "<xml/>";
    const signed = await sign({ scheme: "github", secret: SECRETS.GITHUB_SECRET as string, body });
    const res = await deliver("trig-github", body, signed, { contentType: "application/xml" });
    expect(res.status).toBe(415);
  });
});

describe("reading runs of signed workflows", () => {
  async function githubRun(): Promise<string> {
    const body = JSON.stringify({ n: uid() });
    const res = await deliver(
      "trig-github",
      body,
      await sign({ scheme: "github", secret: SECRETS.GITHUB_SECRET as string, body }),
    );
    return ((await res.json()) as { run_id: string }).run_id;
  }

  it("takes Bearer <one of the scheme's secrets>, or the ADMIN_TOKEN, and nothing else", async () => {
    const id = await githubRun();
    for (const token of [SECRETS.GITHUB_SECRET, SECRETS.ADMIN_TOKEN]) {
      const res = await call(`/runs/${id}`, { headers: { authorization: `Bearer ${token}` } });
      expect(res.status).toBe(200);
    }
    for (const headers of [
      {} as Record<string, string>,
      { authorization: "Bearer nope-nope-nope" },
      { authorization: SECRETS.GITHUB_SECRET as string },
    ]) {
      const res = await call(`/runs/${id}`, { headers });
      expect(res.status).toBe(401);
      expect(res.headers.get("www-authenticate")).toMatch(/^Bearer/);
    }
  });

  it("discord runs are read with the ADMIN_TOKEN only (the public key is public)", async () => {
    const body = JSON.stringify({ id: `${Date.now()}2`, type: 2 });
    const run_id = await accepted(
      await deliver("trig-discord", body, await sign({ scheme: "discord", body })),
    );
    expect(
      (await call(`/runs/${run_id}`, { headers: { authorization: `Bearer ${SECRETS.DISCORD_PUBLIC_KEY}` } }))
        .status,
    ).toBe(401);
    expect(
      (await call(`/runs/${run_id}`, { headers: { authorization: `Bearer ${SECRETS.ADMIN_TOKEN}` } })).status,
    ).toBe(200);
  });
});
