/**
 * Masking (src/engine/mask.ts, src/engine/stream-mask.ts) over random text: a secret put into it
 * in any form the docs name (as is, repeated, split by nothing, base64 at any alignment, base64url,
 * URL- and form-encoded, JSON-escaped once or twice) is gone from what the masker gives back; a
 * stream cut into random chunks lets out, joined, exactly what masking the whole text gives, and
 * never a secret, at any chunking.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createMasker, secretForms } from "../../src/engine/mask.ts";
import { createStreamMasker } from "../../src/engine/stream-mask.ts";
import { fcSettings } from "./fc-settings.ts";

const b64 = (s: string) => Buffer.from(s, "utf8").toString("base64");

/** A secret of 8 to 24 characters, sometimes with characters every encoding changes. */
const secret = fc.oneof(
  fc.string({ minLength: 8, maxLength: 24, unit: "grapheme-ascii" }),
  fc.string({
    minLength: 8,
    maxLength: 16,
    unit: fc.constantFrom("a", "Z", "9", "/", "+", "=", "~", '"', "\\", " ", "&", "ü", "é", "%"),
  }),
);

/** The ways a service may echo a secret back. */
const form = fc.constantFrom<(s: string) => string>(
  (s) => s,
  (s) => `${s}${s}`,
  (s) => b64(s),
  (s) => b64(s).replace(/=+$/, ""),
  (s) => Buffer.from(s, "utf8").toString("base64url"),
  (s) => encodeURIComponent(s),
  (s) => new URLSearchParams({ k: s }).toString().slice(2),
  (s) => JSON.stringify(s).slice(1, -1),
  (s) => JSON.stringify(JSON.stringify(s)).slice(1, -1),
  (s) => b64(`user:${s}`),
  (s) => b64(`x${s}yz`),
  (s) => b64(`ab${s}:more`),
);

const filler = fc.string({ maxLength: 30, unit: "grapheme-ascii" });

/** Text around one or more echoed secrets, and the secrets. */
const echoed = fc
  .record({
    secrets: fc.uniqueArray(secret, { minLength: 1, maxLength: 3 }),
    parts: fc.array(fc.tuple(filler, form, fc.nat()), { minLength: 1, maxLength: 4 }),
    tail: filler,
  })
  .map(({ secrets, parts, tail }) => ({
    secrets,
    text: parts.map(([before, f, i]) => before + f(secrets[i % secrets.length] as string)).join("") + tail,
  }));

/** Where a text is cut into chunks (sorted offsets). */
const cuts = fc.array(fc.nat(), { maxLength: 12 });

function chunked(text: string, at: number[]): string[] {
  const offsets = [...new Set(at.map((n) => n % (text.length + 1)))].sort((a, b) => a - b);
  const out: string[] = [];
  let from = 0;
  for (const o of offsets) {
    out.push(text.slice(from, o));
    from = o;
  }
  out.push(text.slice(from));
  return out;
}

/** Whether any whole form of any secret is still in `text` (the forms the masker itself knows). */
function holdsAForm(text: string, secrets: string[]): string | null {
  for (const s of secrets) for (const f of secretForms(s)) if (text.includes(f)) return f;
  return null;
}

describe("masking random text", () => {
  it("leaves no form of any secret in the text, however it was echoed", () => {
    fc.assert(
      fc.property(echoed, ({ secrets, text }) => {
        const masked = createMasker(secrets).maskText(text);
        expect(holdsAForm(masked, secrets)).toBeNull();
        for (const s of secrets) expect(masked).not.toContain(s);
      }),
      fcSettings(),
    );
  });

  it("lets a stream out, at any chunking, joined, exactly as the whole text is masked", () => {
    fc.assert(
      fc.property(echoed, cuts, ({ secrets, text }, at) => {
        const masker = createMasker(secrets);
        const stream = createStreamMasker(masker);
        const pieces = chunked(text, at).map((c) => stream.push(c));
        const joined = pieces.join("") + stream.flush();
        expect(joined).toBe(masker.maskText(text));
        for (const p of pieces) expect(holdsAForm(p, secrets)).toBeNull();
      }),
      fcSettings(),
    );
  });

  it("lets text without a secret through at once, chunk by chunk", () => {
    fc.assert(
      fc.property(fc.array(filler, { minLength: 1, maxLength: 6 }), (chunks) => {
        const stream = createStreamMasker(createMasker([]));
        expect(chunks.map((c) => stream.push(c))).toEqual(chunks);
        expect(stream.flush()).toBe("");
      }),
      fcSettings(),
    );
  });
});
