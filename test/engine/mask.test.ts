/**
 * Secret masking as docs/file-format.md promises: a recorded value never holds a secret, in any of
 * the shapes a service may echo it back. Expected encodings are produced with Node's Buffer,
 * independently of the masker's own encoder.
 */
import { describe, expect, it } from "vitest";
import type { Json } from "../../src/bundle.ts";
import { createMasker, jsonErrorMessage } from "../../src/engine/mask.ts";
import { createStreamMasker } from "../../src/engine/stream-mask.ts";

const SECRET = "s3cr3t-webhook-value-123";
const TRICKY = 'p@ss/w0rd+"key"\\=1 ü';

const b64 = (s: string) => Buffer.from(s, "utf8").toString("base64");
const b64url = (s: string) => Buffer.from(s, "utf8").toString("base64url");

describe("maskText", () => {
  const masker = createMasker([SECRET, TRICKY]);

  it("replaces every occurrence of a secret", () => {
    expect(masker.maskText(`a ${SECRET} b ${SECRET}`)).toBe("a *** b ***");
  });

  it("covers the secret in a Bearer header", () => {
    expect(masker.maskText(`Bearer ${SECRET}`)).toBe("Bearer ***");
  });

  it.each([
    ["standard base64", b64(TRICKY)],
    ["unpadded base64", b64(TRICKY).replace(/=+$/, "")],
    ["base64url", b64url(TRICKY)],
    ["percent-encoded", encodeURIComponent(TRICKY)],
    ["JSON-escaped", JSON.stringify(TRICKY).slice(1, -1)],
    ["form-encoded (space as +)", new URLSearchParams({ k: TRICKY }).toString().slice(2)],
    ["JSON Pointer segment", TRICKY.replace(/~/g, "~0").replace(/\//g, "~1")],
  ])("replaces the %s form", (_name, form) => {
    const out = masker.maskText(`before ${form} after`);
    expect(out).toBe("before *** after");
  });

  it("hides a secret base64-encoded together with a user name (HTTP Basic)", () => {
    for (const user of ["u", "us", "usr", "admin-user"]) {
      const header = b64(`${user}:${SECRET}`);
      const out = masker.maskText(`Basic ${header}`);
      expect(out).not.toBe(`Basic ${header}`);
      const decoded = Buffer.from(out.slice("Basic ".length).replaceAll("*", ""), "base64").toString(
        "latin1",
      );
      expect(decoded).not.toContain(SECRET.slice(0, 8));
    }
  });

  it("hides the secret inside a JSON document that was quoted as a string again", () => {
    const twice = JSON.stringify(JSON.stringify({ key: TRICKY }));
    expect(masker.maskText(twice)).not.toContain("w0rd");
  });

  it("replaces the longest secret first", () => {
    const m = createMasker(["abcdefgh", "abcdefgh-and-more"]);
    expect(m.maskText("x abcdefgh-and-more y abcdefgh")).toBe("x *** y ***");
  });

  it("ignores an empty secret instead of masking everything", () => {
    expect(createMasker([""]).maskText("plain text")).toBe("plain text");
  });

  it("leaves text without secrets unchanged", () => {
    expect(masker.maskText("nothing to hide here")).toBe("nothing to hide here");
  });
});

describe("maskJson", () => {
  const masker = createMasker([SECRET]);

  it("masks string values and object keys at any depth", () => {
    const value: Json = { [SECRET]: [{ deep: `x${SECRET}y` }], n: 1, ok: true, none: null };
    expect(masker.maskJson(value)).toEqual({ "***": [{ deep: "x***y" }], n: 1, ok: true, none: null });
  });

  it("does not change the value it is given", () => {
    const value: Json = { a: SECRET };
    masker.maskJson(value);
    expect(value).toEqual({ a: SECRET });
  });

  it("hides every form of a secret that a webhook echoed back", () => {
    const echoed: Json = {
      status: 200,
      headers: { "content-type": "application/json" },
      body: {
        headers: { authorization: `Bearer ${SECRET}`, "x-basic": `Basic ${b64(`me:${SECRET}`)}` },
        query: { token: SECRET },
        url: `/echo?token=${encodeURIComponent(SECRET)}&b=${b64url(SECRET)}`,
        raw: JSON.stringify({ token: SECRET }),
        encoded: b64(SECRET),
      },
    };
    const text = JSON.stringify(masker.maskJson(echoed));
    expect(text).not.toContain(SECRET);
    expect(text).not.toContain(b64(SECRET).replace(/=+$/, ""));
    expect(text).not.toContain(b64url(SECRET));
    expect(text).not.toContain(b64(`me:${SECRET}`));
    expect(text).toContain("Bearer ***");
  });

  it("returns values unchanged when there are no secrets", () => {
    const value: Json = { a: "b" };
    expect(createMasker([]).maskJson(value)).toBe(value);
  });
});

describe("a secret that is a URL", () => {
  const HOOK = "https://discord.com/api/webhooks/1234/TOKENabc987?wait=true";
  const masker = createMasker([HOOK]);

  it("is masked whole", () => {
    expect(masker.maskText(`POST ${HOOK} failed`)).toBe("POST *** failed");
  });

  it("shows its path without the query as the URL's origin", () => {
    expect(masker.maskText("POST https://discord.com/api/webhooks/1234/TOKENabc987 answered 404")).toBe(
      "POST https://discord.com/… answered 404",
    );
  });

  it("shows its host and path without a scheme as the URL's origin", () => {
    expect(masker.maskText("to discord.com/api/webhooks/1234/TOKENabc987.")).toBe(
      "to https://discord.com/….",
    );
  });

  it("shows its path as the URL's origin in a stream cut into pieces as well", () => {
    const stream = createStreamMasker(masker);
    const text = "see https://discord.com/api/webhooks/1234/TOKENabc987 now";
    let out = "";
    for (let i = 0; i < text.length; i += 5) out += stream.push(text.slice(i, i + 5));
    out += stream.flush();
    expect(out).toBe("see https://discord.com/… now");
  });

  it("leaves its bare origin alone, and a URL whose only secret part is its query", () => {
    expect(masker.maskText("https://discord.com/ is up")).toBe("https://discord.com/ is up");
    const query = createMasker(["https://hooks.example.com/?token=abcdef123456"]);
    expect(query.maskText("POST https://hooks.example.com/ answered 404")).toBe(
      "POST https://hooks.example.com/ answered 404",
    );
  });
});

describe("each form of a secret, on its own", () => {
  // 10 bytes (base64 ends `==`), with `+` and `/` in its base64, a `~`, a `/`, a quote and a space.
  const S = '~/" >>>>??';
  const m = createMasker([S]);
  const base = b64(S);
  const forms: Array<[string, string]> = [
    ["as written", S],
    ["base64", base],
    ["base64 unpadded", base.replace(/=+$/, "")],
    ["base64url", b64url(S) + "=".repeat((4 - (b64url(S).length % 4)) % 4)],
    ["base64url unpadded", b64url(S)],
    ["percent-encoded", encodeURIComponent(S)],
    ["form-encoded", new URLSearchParams({ s: S }).toString().slice(2)],
    ["a JSON Pointer segment", S.replace(/~/g, "~0").replace(/\//g, "~1")],
    ["JSON-escaped", JSON.stringify(S).slice(1, -1)],
    ["JSON-escaped twice", JSON.stringify(JSON.stringify(S).slice(1, -1)).slice(1, -1)],
  ];

  it("has forms that all differ (so each is checked on its own)", () => {
    expect(base).toMatch(/\+.*\/.*==$|\/.*\+.*==$/);
    expect(new Set(forms.map(([, f]) => f)).size).toBe(forms.length);
  });

  it.each(forms)("masks the secret %s, whole", (_name, form) => {
    expect(m.maskText(`<${form}>`)).toBe("<***>");
  });

  it("masks its base64 core however it is aligned among other bytes, anything after it included", () => {
    for (const secret of ["abcdefg", "abcdefgh", "abcdefghi"]) {
      const one = createMasker([secret]);
      for (const before of ["", "u", "us"]) {
        const encoded = b64(`${before}${secret}:tail-bytes`);
        const masked = one.maskText(encoded);
        expect(masked, `${before}|${secret}`).toContain("***");
        const left = Buffer.from(masked.replaceAll("***", ""), "base64").toString("latin1");
        expect(left, `${before}|${secret}`).not.toContain(secret.slice(1, 7));
      }
    }
  });
});

describe("a masker's edge cases", () => {
  it("masks nothing for no secret, or an empty one, and searches no form", () => {
    for (const m of [createMasker([]), createMasker([""])]) {
      expect(m.maskText("anything at all")).toBe("anything at all");
      expect(m.forms).toEqual([]);
    }
    expect(createMasker(["", "abcdefgh"]).maskText("x abcdefgh y")).toBe("x *** y");
  });

  it("shows an http secret URL's path as its origin, and leaves one of another scheme to whole-secret masking", () => {
    const http = createMasker(["http://hooks.example.com/p/TOKEN-123?x=1"]);
    expect(http.maskText("GET http://hooks.example.com/p/TOKEN-123 failed")).toBe(
      "GET http://hooks.example.com/… failed",
    );
    const ftp = createMasker(["ftp://files.example.com/dir/TOKEN-123?x=1"]);
    expect(ftp.maskText("ftp://files.example.com/dir/TOKEN-123")).toBe(
      "ftp://files.example.com/dir/TOKEN-123",
    );
  });

  it("leaves a secret that only looks like an http URL further in to whole-secret masking, and text with none alone", () => {
    const m = createMasker(["xhttps://hooks.example.com/p/TOKEN-123?x=1"]);
    expect(m.maskText("xhttps://hooks.example.com/p/TOKEN-123")).toBe(
      "xhttps://hooks.example.com/p/TOKEN-123",
    );
    expect(createMasker(["sk-live-123456"]).maskText("Some Status: fine")).toBe("Some Status: fine");
  });

  it("masks a secret that starts like a URL but does not parse as one, whole", () => {
    const m = createMasker(["https://[bad/p/TOKEN-12345"]);
    expect(m.maskText("Status: https://[bad/p/TOKEN-12345 y")).toBe("Status: *** y");
  });

  it("does not search a short secret's base64 pieces (a few base64 characters occur in any text)", () => {
    // "abcde" is YWJjZGU= in base64; its 6-character core YWJjZG is no form of its own.
    expect(createMasker(["abcde"]).maskText("id YWJjZG here, and abcde")).toBe("id YWJjZG here, and ***");
  });

  it("searches no form shorter than 8 characters (a few base64 characters occur in any text)", () => {
    for (const secret of ["abcdefgh", "12345678", "pässwörd"]) {
      const m = createMasker([secret]);
      expect(
        (m.forms ?? []).filter((f) => f.length < 8),
        secret,
      ).toEqual([]);
      expect(m.maskText("YWJj ZGVm MTIz Zmdo"), secret).toBe("YWJj ZGVm MTIz Zmdo");
    }
  });

  it("knows a secret URL written in another case, or with its default port, by both spellings", () => {
    const m = createMasker(["HTTPS://Hooks.Example.COM:443/p/TOKEN-123#frag"]);
    expect(m.maskText("HTTPS://Hooks.Example.COM:443/p/TOKEN-123")).toBe("https://hooks.example.com/…");
    expect(m.maskText("https://hooks.example.com/p/TOKEN-123")).toBe("https://hooks.example.com/…");
    const long = createMasker(["https://h.example.com/p/TOKEN-123?a=1&b=2"]);
    expect(long.maskText("https://h.example.com/p/TOKEN-123")).toBe("https://h.example.com/…");
  });

  it("shows a piece of a secret URL as its origin from 8 characters on, not shorter", () => {
    const m = createMasker(["https://ab.cd/ef?token=123456789"]);
    expect(m.maskText("to ab.cd/ef")).toBe("to https://ab.cd/…");
    const short = createMasker(["https://ab.c/e?token=123456789"]);
    expect(short.maskText("to ab.c/e")).toBe("to ab.c/e");
  });

  it("drops V8's quote of the text from a JSON.parse message", () => {
    let message = "";
    try {
      JSON.parse('{"a": sk-live-123456');
    } catch (e) {
      message = jsonErrorMessage(e);
    }
    expect(message).toBe("Unexpected token 's'");
    expect(jsonErrorMessage(new Error("Unexpected end of JSON input"))).toBe("Unexpected end of JSON input");
    expect(jsonErrorMessage("plain")).toBe("plain");
  });
});
