/**
 * The email trigger (docs/triggers.md, "Email") through the Worker's own `email()` handler, given
 * real RFC 5322 messages as Email Routing delivers them (multipart with an attachment, encoded
 * headers, one without a Message-ID): the run's params, one run per message however often it is
 * sent, and a bounce (`setReject`) with its code and an `email.rejected` line for every refusal.
 */
import { createExecutionContext, runInDurableObject, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import worker from "../../../src/index.ts";
import { uniqueKey, waitForRun } from "../../worker/harness.ts";

interface Sent {
  rejected: string | null;
}

/** Hands `raw` to the Worker's `email()` handler as Email Routing would, from `from` to `to`. */
async function receive(raw: string, from: string, to: string, rawSize?: number): Promise<Sent> {
  const bytes = new TextEncoder().encode(raw);
  const sent: Sent = { rejected: null };
  const message = {
    from,
    to,
    headers: new Headers(),
    raw: new Response(bytes).body as ReadableStream<Uint8Array>,
    rawSize: rawSize ?? bytes.byteLength,
    setReject(reason: string) {
      sent.rejected = reason;
    },
    forward: async () => ({ messageId: "" }),
    reply: async () => ({ messageId: "" }),
  } as unknown as ForwardableEmailMessage;
  const ctx = createExecutionContext();
  await (worker as Required<Pick<ExportedHandler<Env>, "email">>).email(message, env as Env, ctx);
  await waitOnExecutionContext(ctx);
  return sent;
}

const runOf = (key: string) => env.RUNS.idFromName(`trig-email\n${key}`).toString();
/** The key of a message with a Message-ID: its envelope's sender and recipient, and the id. */
const keyOf = (from: string, to: string, id: string) =>
  `email:${from.toLowerCase()}:${to.toLowerCase()}:${id}`;

/** A multipart/mixed message: text and HTML alternatives, a PDF attachment, an encoded subject. */
function multipart(messageId: string): string {
  return [
    "From: =?UTF-8?Q?Ada_L=C3=B8velace?= <ada@customer.example>",
    "To: Support <support@fixture.example>",
    "Subject: =?UTF-8?B?w4ljcmFuIGJsYW5j?=",
    `Message-ID: ${messageId}`,
    "Date: Sat, 28 Nov 2026 10:00:00 +0100",
    "X-Ticket-Priority: high",
    "MIME-Version: 1.0",
    'Content-Type: multipart/mixed; boundary="outer"',
    "",
    "--outer",
    'Content-Type: multipart/alternative; boundary="inner"',
    "",
    "--inner",
    "Content-Type: text/plain; charset=utf-8",
    "Content-Transfer-Encoding: quoted-printable",
    "",
    "The screen stays white =E2=80=94 since this morning.",
    "--inner",
    "Content-Type: text/html; charset=utf-8",
    "",
    "<p>The screen stays white</p>",
    "--inner--",
    "--outer",
    'Content-Type: application/pdf; name="screen.pdf"',
    'Content-Disposition: attachment; filename="screen.pdf"',
    "Content-Transfer-Encoding: base64",
    "",
    btoa("%PDF-1.4 twelve"),
    "--outer--",
    "",
  ].join("\r\n");
}

function plain(subject: string, messageId: string | null, body = "Hello"): string {
  return [
    "From: bob@customer.example",
    "To: help@tickets.fixture.example",
    `Subject: ${subject}`,
    ...(messageId ? [`Message-ID: ${messageId}`] : []),
    "Date: Sat, 28 Nov 2026 09:00:00 +0000",
    "",
    body,
    "",
  ].join("\r\n");
}

afterEach(() => vi.restoreAllMocks());

describe("email trigger", () => {
  it("starts a run with the parsed message as params: text, HTML, decoded headers, attachments listed", async () => {
    const id = `<${uniqueKey("mp")}@customer.example>`;
    const sent = await receive(multipart(id), "ada@customer.example", "support@fixture.example");
    expect(sent.rejected).toBeNull();
    const run = await waitForRun(runOf(keyOf("ada@customer.example", "support@fixture.example", id)));
    expect(run.status).toBe("complete");
    expect(run.params).toMatchObject({
      from: "ada@customer.example",
      to: "support@fixture.example",
      subject: "Écran blanc",
      text: "The screen stays white — since this morning.\n",
      html: "<p>The screen stays white</p>\n",
      message_id: id,
      attachments: [{ filename: "screen.pdf", content_type: "application/pdf", size: 15 }],
    });
    expect(run.params.date).toBe("2026-11-28T09:00:00.000Z");
    expect(run.params.headers).toMatchObject({ "x-ticket-priority": "high", "mime-version": "1.0" });
  });

  it("takes any address a wildcard pattern covers", async () => {
    const id = `<${uniqueKey("wild")}@customer.example>`;
    const sent = await receive(plain("Printer", id), "bob@customer.example", "Help@Tickets.Fixture.Example");
    expect(sent.rejected).toBeNull();
    const key = keyOf("bob@customer.example", "Help@Tickets.Fixture.Example", id);
    expect((await waitForRun(runOf(key))).params.subject).toBe("Printer");
  });

  it("starts one run for a message sent twice, even after the run's object was killed", async () => {
    const id = `<${uniqueKey("twice")}@customer.example>`;
    await receive(plain("Twice", id), "bob@customer.example", "help@tickets.fixture.example");
    const runId = runOf(keyOf("bob@customer.example", "help@tickets.fixture.example", id));
    const first = await waitForRun(runId);
    const stub = env.RUNS.get(env.RUNS.idFromString(runId));
    await runInDurableObject(stub, (_o, state) => state.abort("killed")).catch(() => {});
    const again = await receive(plain("Twice", id), "bob@customer.example", "help@tickets.fixture.example");
    expect(again.rejected).toBeNull();
    const after = await waitForRun(runId);
    expect(after.created_at).toBe(first.created_at);
  });

  it("starts a run of its own for a mail from another sender that reuses a Message-ID", async () => {
    const id = `<${uniqueKey("reused")}@customer.example>`;
    await receive(plain("First", id), "bob@customer.example", "help@tickets.fixture.example");
    const first = await waitForRun(runOf(keyOf("bob@customer.example", "help@tickets.fixture.example", id)));
    const second = await receive(
      plain("Second", id),
      "carol@customer.example",
      "help@tickets.fixture.example",
    );
    expect(second.rejected).toBeNull();
    const other = await waitForRun(
      runOf(keyOf("carol@customer.example", "help@tickets.fixture.example", id)),
    );
    expect(other.run_id).not.toBe(first.run_id);
    expect([first.params.subject, other.params.subject]).toEqual(["First", "Second"]);
  });

  it("starts a run of its own for the same Message-ID sent to another address of the workflow", async () => {
    const id = `<${uniqueKey("two-addresses")}@customer.example>`;
    await receive(plain("One", id), "bob@customer.example", "help@tickets.fixture.example");
    await receive(plain("One", id), "bob@customer.example", "billing@tickets.fixture.example");
    const a = await waitForRun(runOf(keyOf("bob@customer.example", "help@tickets.fixture.example", id)));
    const b = await waitForRun(runOf(keyOf("bob@customer.example", "billing@tickets.fixture.example", id)));
    expect(a.run_id).not.toBe(b.run_id);
    expect([a.params.to, b.params.to]).toEqual([
      "help@tickets.fixture.example",
      "billing@tickets.fixture.example",
    ]);
  });

  it("keys a message without a Message-ID by its bytes: the same bytes start one run", async () => {
    const raw = plain("No id", null, uniqueKey("body"));
    await receive(raw, "bob@customer.example", "help@tickets.fixture.example");
    const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(raw));
    const hex = [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
    const run = await waitForRun(runOf(`email:sha256:${hex}`));
    expect(run.params.message_id).toBeNull();
    expect(run.status).toBe("complete");
  });
});

describe("email trigger refusals", () => {
  async function refused(raw: string, from: string, to: string, rawSize?: number) {
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    const sent = await receive(raw, from, to, rawSize);
    const line = errors.mock.calls.map((c) => String(c[0])).find((l) => l.includes('"email.rejected"'));
    return { reason: sent.rejected ?? "", line: line ? JSON.parse(line) : null };
  }

  it("bounces mail to an address no workflow takes: no_workflow", async () => {
    const r = await refused(
      plain("Hi", "<x1@customer.example>"),
      "bob@customer.example",
      "nobody@fixture.example",
    );
    expect(r.reason).toMatch(/^no_workflow: no workflow takes mail to nobody@fixture.example$/);
    expect(r.line).toMatchObject({
      event: "email.rejected",
      code: "no_workflow",
      to: "nobody@fixture.example",
    });
  });

  it("bounces a sender outside `from`: sender_not_allowed", async () => {
    const id = `<${uniqueKey("spam")}@spam.example>`;
    const r = await refused(plain("Hi", id), "eve@spam.example", "support@fixture.example");
    expect(r.reason).toMatch(/^sender_not_allowed: /);
    expect(r.line).toMatchObject({ code: "sender_not_allowed", from: "eve@spam.example" });
    const stub = env.RUNS.get(
      env.RUNS.idFromName(`trig-email\n${keyOf("eve@spam.example", "support@fixture.example", id)}`),
    );
    expect(await runInDurableObject(stub, (_o, state) => state.storage.kv.get("run") ?? null)).toBeNull();
  });

  it("bounces params that fail params.schema: invalid_params, naming the field", async () => {
    const r = await refused(
      plain("bad news", "<x2@customer.example>"),
      "bob@customer.example",
      "support@fixture.example",
    );
    expect(r.reason).toMatch(
      /^invalid_params: the body does not match trig-email's params.schema: \/subject /,
    );
    expect(r.line).toMatchObject({ code: "invalid_params" });
  });

  it("bounces a message over 1 MiB before reading it: too_large", async () => {
    const r = await refused(
      plain("Big", "<x3@customer.example>"),
      "bob@customer.example",
      "support@fixture.example",
      1024 * 1024 + 1,
    );
    expect(r.reason).toMatch(/^too_large: the message is 1048577 bytes; at most 1048576 are taken$/);
    expect(r.line).toMatchObject({ code: "too_large" });
  });

  it("bounces a MIME tree nested too deep to parse: unreadable, never an error", async () => {
    const depth = 300; // postal-mime gives up past 256 levels
    const lines = ["From: bob@customer.example", "To: support@fixture.example", "Subject: deep"];
    lines.push("Message-ID: <deep@customer.example>", "MIME-Version: 1.0");
    for (let i = 0; i < depth; i++) {
      lines.push(`Content-Type: multipart/mixed; boundary="b${i}"`, "", `--b${i}`);
    }
    lines.push("Content-Type: text/plain", "", "bottom", "");
    for (let i = depth - 1; i >= 0; i--) lines.push(`--b${i}--`);
    const r = await refused(lines.join("\r\n"), "bob@customer.example", "support@fixture.example");
    expect(r.reason).toMatch(/^unreadable: the message could not be parsed \(.*nesting.*\)$/i);
    expect(r.line).toMatchObject({ event: "email.rejected", code: "unreadable" });
  });
});
