/**
 * Property-based tests of POST /invoke/{name} (fast-check): whatever the body (JSON, forms, bytes),
 * headers (credentials, every sender's signature headers) or name,
 * the Worker answers a 2xx or an application/problem+json body with a `code`, never a 5xx
 * other than the documented 500 server_misconfigured of the `auth-unset` fixture (whose secret
 * env var is unset on purpose). The workflows targeted run transforms only, so each accepted run
 * finishes at once and the properties stay fast.
 */
import { env } from "cloudflare:workers";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { call, TOKEN } from "../worker/harness.ts";
import { SECRETS, sign } from "../worker/signed.ts";
import { fcSettings, propTimeoutMs } from "./fc-settings.ts";

const MIB = 1024 * 1024;

const NAMES = [
  "rel-open",
  "basic",
  "rel-leak-params",
  "auth-bearer",
  "auth-raw",
  "auth-unset",
  "no-such-workflow",
  // Signed deliveries, forms, request headers, rate limits (docs/triggers.md).
  "trig-github",
  "trig-stripe",
  "trig-slack",
  "trig-standard-webhooks",
  "trig-twilio",
  "trig-discord",
  "trig-hmac",
  "trig-form",
  "trig-headers",
  "trig-rate-limit",
];

/** Printable ASCII: what a header value can hold without the test's own Request throwing. */
const headerText = (maxLength: number) =>
  fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)), maxLength });

const contentType = fc.oneof(
  fc.constantFrom(
    "application/json",
    "application/json; charset=utf-8",
    "text/plain",
    "application/x-www-form-urlencoded",
    "multipart/form-data; boundary=xyz",
    "application/octet-stream",
    "",
  ),
  headerText(40),
);

const prefer = fc.oneof(
  fc.constantFrom("wait=0", "wait=1", "wait=60", "wait=61", "wait=-1", "wait=abc", "respond-async, wait=2"),
  fc.constantFrom("wait=99999999999999999999999", 'wait="3"', "handling=lenient"),
  headerText(40),
);

const authorization = fc.oneof(
  fc.constant(`Bearer ${TOKEN}`),
  fc.constant(TOKEN),
  fc.constant("Bearer "),
  headerText(60),
);

const hex = (n: number) => fc.stringMatching(new RegExp(`^[0-9a-f]{${n}}$`));
const seconds = fc.oneof(
  fc.constant(String(Math.floor(Date.now() / 1000))),
  fc.integer({ min: -1e12, max: 1e13 }).map(String),
  headerText(14),
);
/** Signature headers of every scheme: well-formed but wrong, malformed, or noise. */
const signatureHeaders = fc.record(
  {
    "x-hub-signature-256": fc.oneof(
      hex(64).map((h) => `sha256=${h}`),
      headerText(80),
    ),
    "stripe-signature": fc.oneof(
      fc.tuple(seconds, hex(64)).map(([t, h]) => `t=${t},v1=${h}`),
      fc.constantFrom("t=,v1=", ",,,", "v1=zz", "t=1"),
      headerText(120),
    ),
    "x-slack-signature": fc.oneof(
      hex(64).map((h) => `v0=${h}`),
      headerText(70),
    ),
    "x-slack-request-timestamp": seconds,
    "webhook-id": headerText(40),
    "webhook-timestamp": seconds,
    "webhook-signature": fc.oneof(
      fc.base64String({ maxLength: 60 }).map((b) => `v1,${b}`),
      headerText(80),
    ),
    "x-twilio-signature": fc.oneof(fc.base64String({ maxLength: 40 }), headerText(40)),
    "x-signature-ed25519": fc.oneof(hex(128), hex(64), headerText(130)),
    "x-signature-timestamp": seconds,
    "x-acme-signature": fc.oneof(
      fc.base64String({ maxLength: 100 }).map((b) => `sha512=${b}`),
      headerText(100),
    ),
    "x-github-event": headerText(30),
    "x-tenant": headerText(30),
  },
  { requiredKeys: [] },
);

const headers = fc
  .tuple(
    fc.record(
      {
        "content-type": contentType,
        "idempotency-key": fc.oneof(headerText(20), headerText(300), fc.constant("fixed-key")),
        prefer,
        authorization,
        "x-api-key": authorization,
      },
      { requiredKeys: [] },
    ),
    signatureHeaders,
  )
  .map(([a, b]) => ({ ...b, ...a }));

/** A JSON object body of exactly `bytes` bytes. */
function paddedObject(bytes: number): string {
  const frame = '{"pad":""}';
  return `{"pad":"${"x".repeat(Math.max(0, bytes - frame.length))}"}`;
}

function nested(depth: number, open: string, close: string, leaf: string): string {
  return open.repeat(depth) + leaf + close.repeat(depth);
}

/** Around the 128-level limit, and far past it (1 MiB of brackets is a million levels). */
const depth = fc.oneof(fc.integer({ min: 1, max: 260 }), fc.integer({ min: 260, max: 150_000 }));

/** Form bodies: fields, repeated keys, a `payload` that is (or is almost) JSON, raw percent noise. */
const formBody = fc.oneof(
  fc
    .dictionary(fc.string({ maxLength: 10 }), fc.string({ maxLength: 20 }))
    .map((d) => new URLSearchParams(d).toString()),
  fc
    .array(fc.tuple(fc.constantFrom("a", "b", "__proto__", "payload"), fc.string({ maxLength: 8 })), {
      maxLength: 6,
    })
    .map((pairs) => pairs.map(([k, v]) => `${k}=${encodeURIComponent(v)}`).join("&")),
  fc.json({ maxDepth: 3 }).map((j) => `payload=${encodeURIComponent(j)}`),
  depth.map((d) => `payload=${encodeURIComponent(nested(d, '{"a":', "}", "1"))}`),
  fc.string({ unit: fc.constantFrom("%", "=", "&", "+", "a", "\u00ff", "%zz", "%C3"), maxLength: 40 }),
);

const body: fc.Arbitrary<string | Uint8Array> = fc.oneof(
  formBody,
  fc.json({ maxDepth: 4 }),
  fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)),
  fc.dictionary(fc.string(), fc.jsonValue({ maxDepth: 2 })).map((v) => JSON.stringify(v)),
  fc
    .record({ items: fc.array(fc.record({ name: fc.string(), price: fc.integer() }), { maxLength: 4 }) })
    .map((v) => JSON.stringify(v)),
  fc.uint8Array({ maxLength: 512 }),
  fc.string({ unit: "binary", maxLength: 256 }),
  fc.integer({ min: MIB - 16, max: MIB + 16 }).map(paddedObject),
  depth.map((d) => nested(d, '{"a":', "}", "1")),
  depth.map((d) => nested(d, "[", "]", "")),
  depth.map((d) => `{"a":${nested(d, "[", "]", "")}}`),
  fc
    .tuple(fc.json({ maxDepth: 3 }), fc.nat(), fc.string({ minLength: 1, maxLength: 3 }))
    .map(
      ([text, at, junk]) => text.slice(0, at % (text.length + 1)) + junk + text.slice(at % (text.length + 1)),
    ),
);

const query = fc.oneof(fc.constant(""), fc.constantFrom("?wait=1", "?wait=x", "?wait=-5", "?wait=100000"));

interface Answer {
  status: number;
  contentType: string;
  text: string;
}

async function send(
  name: string,
  b: string | Uint8Array,
  h: Record<string, string>,
  q: string,
  method = "POST",
): Promise<Answer> {
  const res = await call(`/invoke/${encodeURIComponent(name)}${q}`, { method, headers: h, body: b });
  return { status: res.status, contentType: res.headers.get("content-type") ?? "", text: await res.text() };
}

function expectWellFormed(name: string, a: Answer): void {
  if (a.status >= 200 && a.status < 300) {
    const value = JSON.parse(a.text) as { run_id?: unknown; status?: unknown };
    expect(typeof value.run_id).toBe("string");
    return;
  }
  expect(a.contentType).toMatch(/^application\/problem\+json/);
  const problem = JSON.parse(a.text) as { status: number; code: unknown; title: unknown };
  expect(typeof problem.code).toBe("string");
  expect(problem.status).toBe(a.status);
  expect(a.text).not.toMatch(/\n\s+at /);
  if (a.status >= 500) {
    expect({ name, status: a.status, code: problem.code }).toEqual({
      name: "auth-unset",
      status: 500,
      code: "server_misconfigured",
    });
  }
}

describe("POST /invoke/{name} under random input", () => {
  it(
    "answers 2xx or problem+json with a code, never an unexpected 5xx",
    async () => {
      await fc.assert(
        fc.asyncProperty(fc.constantFrom(...NAMES), body, headers, query, async (name, b, h, q) => {
          expectWellFormed(name, await send(name, b, h, q));
        }),
        fcSettings(env),
      );
    },
    propTimeoutMs(300, env),
  );

  it(
    "answers any workflow name, even odd ones, with 404 workflow_not_found or a run",
    async () => {
      await fc.assert(
        fc.asyncProperty(fc.string({ minLength: 1, maxLength: 80 }), async (name) => {
          const a = await send(name, "{}", { "content-type": "application/json" }, "");
          expectWellFormed(name, a);
          if (!NAMES.includes(name)) {
            expect([404, 405]).toContain(a.status);
          }
        }),
        fcSettings(env),
      );
    },
    propTimeoutMs(300, env),
  );

  it(
    "answers a replayed Idempotency-Key without Prefer with 202 and the same run, or 409 for another body",
    async () => {
      await fc.assert(
        fc.asyncProperty(
          headerText(40).filter((k) => k.trim().length > 0),
          fc.jsonValue({ maxDepth: 2 }),
          fc.jsonValue({ maxDepth: 2 }),
          async (key, first, second) => {
            const h = {
              "content-type": "application/json",
              "idempotency-key": `prop-${crypto.randomUUID()}-${key}`,
            };
            const a = await send("rel-open", JSON.stringify({ v: first }), h, "");
            const b = await send("rel-open", JSON.stringify({ v: second }), h, "");
            expect(a.status).toBe(202);
            if (b.status === 409) {
              expect(JSON.parse(b.text).code).toBe("idempotency_conflict");
            } else {
              expect(b.status).toBe(202);
              expect(JSON.parse(b.text).run_id).toBe(JSON.parse(a.text).run_id);
            }
          },
        ),
        fcSettings(env),
      );
    },
    propTimeoutMs(300, env),
  );

  it(
    "accepts any form body its sender signed (Twilio's sorting, repeated keys, any characters)",
    async () => {
      const field = fc.string({ unit: "binary", minLength: 1, maxLength: 6 });
      await fc.assert(
        fc.asyncProperty(
          fc.array(fc.tuple(field, fc.string({ unit: "binary", maxLength: 12 })), { maxLength: 6 }),
          async (pairs) => {
            const form = new URLSearchParams(pairs).toString();
            if (form.trimStart().startsWith("%7B") || pairs.some(([k]) => k === "payload")) return;
            const url = "http://workflow.test/invoke/trig-twilio";
            const type = "application/x-www-form-urlencoded";
            const headers = await sign({
              scheme: "twilio",
              secret: SECRETS.TWILIO_SECRET as string,
              body: form,
              url,
              contentType: type,
            });
            const a = await send("trig-twilio", form, { ...headers, "content-type": type }, "");
            expect(a.status, a.text).toBe(202);
          },
        ),
        fcSettings(env),
      );
    },
    propTimeoutMs(300, env),
  );
});
