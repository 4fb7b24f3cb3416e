/**
 * The email trigger (src/triggers/email/email.ts) with random MIME: headers of any text, encoded
 * words good and broken, multiparts nested to any depth (past what the parser takes), parts in
 * any transfer encoding with good or broken content, attached messages. Each message starts a
 * run (which then exists) or is rejected with a known code, as `<code>: <why>`, never an exception.
 */
import { env } from "cloudflare:workers";
import fc from "fast-check";
import { afterEach, describe, expect, it, vi } from "vitest";
import { receiveEmail } from "../../src/triggers/email/email.ts";
import { fcSettings, propTimeoutMs } from "./fc-settings.ts";

afterEach(() => vi.restoreAllMocks());

const CODES = [
  "too_large",
  "no_workflow",
  "sender_not_allowed",
  "unreadable",
  "invalid_params",
  "rate_limited",
];

/** Printable text of one header line (no CR or LF). */
const text = (max: number) =>
  fc.string({
    maxLength: max,
    unit: fc.oneof(
      fc.constantFrom("é", "ü", "\u2014", "\t"),
      fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)),
    ),
  });

const headerValue = fc.oneof(
  text(40),
  text(20).map((t) => `=?UTF-8?B?${btoa(unescape(encodeURIComponent(t)))}?=`),
  fc.constantFrom("=?bad?Q?=ZZ?=", "=?UTF-8?B?!!!?=", "=?UTF-8?Q?a_b?= =?UTF-8?Q?c?=", "x".repeat(2000)),
);

const encoding = fc.constantFrom("7bit", "8bit", "base64", "quoted-printable", "binary", "x-unknown");
const contentType = fc.constantFrom(
  "text/plain; charset=utf-8",
  "text/html; charset=iso-8859-1",
  "text/plain; charset=x-unknown",
  "application/octet-stream",
  "image/png",
  "message/rfc822",
);

interface Part {
  headers: Array<[string, string]>;
  body: string;
}

const leaf: fc.Arbitrary<Part> = fc
  .tuple(
    contentType,
    encoding,
    fc.oneof(
      text(200),
      fc.constantFrom("=ZZ=\r\n=", "!!!not base64===", "<p>&amp;&hellip;&#x1F600;&#xD800;&bogus;</p>"),
    ),
  )
  .map(([ct, enc, body]) => ({
    headers: [
      ["Content-Type", ct],
      ["Content-Transfer-Encoding", enc],
    ] as Array<[string, string]>,
    body: enc === "base64" && !body.startsWith("!") ? btoa(unescape(encodeURIComponent(body))) : body,
  }));

/** Multiparts `depth` deep, each with a leaf beside the next level. */
function nestedParts(depth: number, inner: Part): Part {
  let part = inner;
  for (let d = 0; d < depth; d++) {
    const b = `b${d}`;
    part = {
      headers: [["Content-Type", `multipart/mixed; boundary="${b}"`]],
      body: [`--${b}`, render(part), `--${b}--`, ""].join("\r\n"),
    };
  }
  return part;
}

function render(p: Part): string {
  return [...p.headers.map(([k, v]) => `${k}: ${v}`), "", p.body].join("\r\n");
}

const top = fc.oneof(
  leaf,
  fc.tuple(fc.integer({ min: 1, max: 400 }), leaf).map(([depth, inner]) => nestedParts(depth, inner)),
  fc.array(leaf, { minLength: 1, maxLength: 4 }).map((parts) => ({
    headers: [["Content-Type", 'multipart/alternative; boundary="alt"']] as Array<[string, string]>,
    body: [...parts.flatMap((p) => ["--alt", render(p)]), "--alt--", ""].join("\r\n"),
  })),
);

const message = fc
  .record({
    subject: headerValue,
    from: headerValue,
    id: fc.option(fc.string({ minLength: 1, maxLength: 20, unit: "grapheme-ascii" }).map((s) => `<${s}@x>`)),
    extra: fc.array(
      fc.tuple(
        fc.string({ minLength: 1, maxLength: 12, unit: fc.constantFrom("X", "-", "a", "B", "1") }),
        headerValue,
      ),
      { maxLength: 3 },
    ),
    part: top,
  })
  .map((m) =>
    [
      `From: ${m.from}`,
      "To: support@fixture.example",
      `Subject: ${m.subject}`,
      ...(m.id ? [`Message-ID: ${m.id}`] : []),
      ...m.extra.map(([k, v]) => `${k}: ${v}`),
      "MIME-Version: 1.0",
      render(m.part),
    ].join("\r\n"),
  );

describe("email of any MIME", () => {
  it(
    "starts a run or is rejected with a known code, never an exception",
    async () => {
      vi.spyOn(console, "error").mockImplementation(() => {});
      await fc.assert(
        fc.asyncProperty(
          message,
          fc.constantFrom("ada@customer.example", "x@y.example"),
          async (raw, from) => {
            const bytes = new TextEncoder().encode(raw);
            let rejected: string | null = null;
            const outcome = await receiveEmail(
              {
                from,
                to: "support@fixture.example",
                raw: new Response(bytes).body as ReadableStream<Uint8Array>,
                rawSize: bytes.byteLength,
                setReject: (reason: string) => {
                  rejected = reason;
                },
              },
              env as Env,
            );
            if ("runId" in outcome) {
              expect(rejected).toBeNull();
              const run = env.RUNS.get(env.RUNS.idFromString(outcome.runId));
              expect(await (run as unknown as { view(): Promise<unknown> }).view()).not.toBeNull();
            } else {
              expect(CODES).toContain(outcome.code);
              expect(rejected).toBe(`${outcome.code}: ${outcome.detail}`);
            }
          },
        ),
        fcSettings(env),
      );
    },
    propTimeoutMs(400, env),
  );
});
