/**
 * Every signature scheme (src/triggers/webhook/schemes.ts) against random mutations of a valid
 * delivery, signed by the sender's own library over a random body: a bit of the body or of the
 * signature changed, the delivery seen at a random distance from when it was signed. It is
 * accepted only unmodified and on time (within the tolerance, 300 s, for a scheme that signs a time).
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { delivery, SCHEMES_UNDER_TEST, signed, T, verify } from "../triggers/webhook/signature-cases.ts";
import { fcSettings, propTimeoutMs } from "./fc-settings.ts";

const TOLERANCE_S = 300;

/** A body the scheme's sender could send: JSON for most, a form for Twilio. */
const bodyOf = (contentType: string) =>
  contentType === "application/x-www-form-urlencoded"
    ? fc
        .dictionary(
          fc.string({ minLength: 1, maxLength: 8, unit: "grapheme-ascii" }),
          fc.string({ maxLength: 16 }),
          {
            minKeys: 1,
            maxKeys: 4,
          },
        )
        .map((d) => new URLSearchParams(d).toString())
    : fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify({ v }));

/** What is done to the delivery: nothing, a bit of the body, a bit of the signature (before its padding). */
const mutation = fc.oneof(
  fc.constant({ kind: "none" as const, at: 0 }),
  fc.record({ kind: fc.constant("body" as const), at: fc.nat() }),
  fc.record({ kind: fc.constant("signature" as const), at: fc.nat() }),
);

const flip = (text: string, at: number) =>
  text.slice(0, at) + String.fromCharCode(text.charCodeAt(at) ^ 1) + text.slice(at + 1);

describe.each(SCHEMES_UNDER_TEST)("the $scheme scheme under random mutations", (s) => {
  it(
    "accepts a delivery only unmodified and on time",
    async () => {
      await fc.assert(
        fc.asyncProperty(
          bodyOf(s.contentType),
          mutation,
          fc.integer({ min: -2 * TOLERANCE_S, max: 2 * TOLERANCE_S }),
          async (body, m, skew) => {
            // Linear signs the time inside the body: its timestamp is the body's.
            const b = s.scheme === "linear" ? JSON.stringify({ webhookTimestamp: T * 1000, v: body }) : body;
            const d = await signed(s, { body: b });
            let changed = d;
            if (m.kind === "body") changed = { ...d, body: flip(d.body, m.at % d.body.length) };
            if (m.kind === "signature") {
              const value = d.headers.get(s.signature) as string;
              // The last characters may be padding or bits an encoding ignores: not a change.
              const span = Math.max(1, value.replace(/=+$/, "").length - 2);
              const headers = new Headers(d.headers);
              headers.set(s.signature, flip(value, m.at % span));
              changed = { ...d, headers };
            }
            const onTime = !s.timed || Math.abs(skew) <= TOLERANCE_S;
            expect(await verify(s, delivery(changed, T + skew))).toBe(m.kind === "none" && onTime);
          },
        ),
        fcSettings(),
      );
    },
    propTimeoutMs(50),
  );
});
