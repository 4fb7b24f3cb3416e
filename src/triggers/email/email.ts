/**
 * The email trigger (docs/triggers.md, "Email"): the Worker's `email()` handler (Email Routing
 * sends the mail of an address to the Worker) starts a run of the one workflow whose
 * `invoke.email.to` patterns take the recipient. The message is parsed by postal-mime (the MIME
 * parser miniflare itself uses) into `params` = `{from, to, subject, text, html, message_id,
 * date, headers, attachments}`: `from` and `to` are the envelope's addresses, `headers` the
 * message's by lower-case name (the first of a repeated one), attachments listed
 * (`{filename, content_type, size}`) and their bodies dropped.
 *
 * The run's idempotency key is `email:<sender>:<recipient>:<Message-ID>` (a message without one:
 * `email:sha256:<the raw message's hash>`), so a resent message reaches the run that exists, and a
 * mail from another sender or to another address that reuses a Message-ID (anyone can write any
 * Message-ID) is a run of its own instead of being taken for the first. Nothing is accepted and
 * then lost: every refusal is `message.setReject("<code>: <why>")` (the sender's bounce starts with
 * the code) and an `email.rejected` log line: `too_large` (over 1 MiB before parsing),
 * `no_workflow`, `sender_not_allowed`, `unreadable` (the MIME parser gave up on it),
 * `invalid_params`, and, as for an invoke, `rate_limited`, `queue_full` and `server_misconfigured`.
 */

import workflowBundle from "workflow-bundle";
import type { Bundle, JsonObject } from "../../bundle.ts";
import { matchesAddress } from "../../common/email-address.ts";
import { HttpProblem } from "../../common/problem.ts";
import { sha256Hex } from "../../common/sha256.ts";
import PostalMime from "../../generated/postal-mime.js";
import { RunRefusal } from "../../run/refusal.ts";
import { recordRequest } from "../../run/start/run-request.ts";
import type { StartOutcome } from "../../run/start/start-run.ts";
import { invocableWorkflow, startFromEvent } from "../event-start.ts";

const bundle: Bundle = workflowBundle;

/** Larger messages are refused before they are read (docs/errors-and-limits.md). */
export const MAX_EMAIL_BYTES = 1024 * 1024;

/** What the handler is given: the parts of Cloudflare's `ForwardableEmailMessage` it uses. */
export interface IncomingEmail {
  readonly from: string;
  readonly to: string;
  readonly raw: ReadableStream<Uint8Array>;
  readonly rawSize: number;
  setReject(reason: string): void;
}

/** What became of one message: the run it started (or reached), or the refusal it got. */
export type EmailOutcome = { runId: string } | { code: string; detail: string };

/** The Worker's `email()` handler. */
export async function receiveEmail(message: IncomingEmail, env: Env): Promise<EmailOutcome> {
  const outcome = await startFromEmail(message, env);
  if ("code" in outcome) {
    message.setReject(`${outcome.code}: ${outcome.detail}`);
    console.error(
      JSON.stringify({ event: "email.rejected", from: message.from, to: message.to, ...outcome }),
    );
  }
  return outcome;
}

async function startFromEmail(message: IncomingEmail, env: Env): Promise<EmailOutcome> {
  const refuse = (code: string, detail: string) => ({ code, detail });
  if (bundle.buildErrors?.length)
    return refuse("build_failed", "the workflows do not build; try again later");
  if (message.rawSize > MAX_EMAIL_BYTES) {
    return refuse(
      "too_large",
      `the message is ${message.rawSize} bytes; at most ${MAX_EMAIL_BYTES} are taken`,
    );
  }
  const target = invocableWorkflow((wf) => wf.email?.to.some((p) => matchesAddress(p, message.to)) ?? false);
  if (!target) return refuse("no_workflow", `no workflow takes mail to ${message.to}`);
  const { key, wf } = target;
  const allowed = wf.email?.from;
  if (allowed && !allowed.some((p) => matchesAddress(p, message.from))) {
    return refuse("sender_not_allowed", `${message.from} may not start ${wf.name}`);
  }
  const raw = new Uint8Array(await new Response(message.raw).arrayBuffer());
  if (raw.byteLength > MAX_EMAIL_BYTES) {
    return refuse(
      "too_large",
      `the message is ${raw.byteLength} bytes; at most ${MAX_EMAIL_BYTES} are taken`,
    );
  }
  let params: JsonObject;
  try {
    params = await emailParams(raw, message);
  } catch (e) {
    // postal-mime throws on what it cannot read (a MIME tree nested too deep, among others).
    const why = e instanceof Error ? (e.message.split("\n")[0] ?? "").slice(0, 200) : "";
    return refuse("unreadable", `the message could not be parsed${why ? ` (${why})` : ""}`);
  }
  const request = recordRequest(wf.invoke.headers, new Headers());
  const id = typeof params.message_id === "string" && params.message_id !== "" ? params.message_id : null;
  let result: StartOutcome;
  try {
    const idempotencyKey =
      id !== null
        ? `email:${message.from.toLowerCase()}:${message.to.toLowerCase()}:${id}`
        : `email:sha256:${await sha256Hex(raw)}`;
    result = await startFromEvent(env, { key, wf, params, request, idempotencyKey });
  } catch (e) {
    if (e instanceof RunRefusal) {
      const first = e.errors?.[0];
      return refuse(e.code, first ? `${e.message}: ${first.path || "/"} ${first.message}` : e.message);
    }
    if (e instanceof HttpProblem) return refuse(e.code, e.message);
    throw e;
  }
  switch (result.outcome) {
    case "rate_limited":
      return refuse("rate_limited", `too many runs of ${wf.name}; send it again later`);
    case "queue_full":
      return refuse("queue_full", `${wf.name}'s queue for this key is full; send it again later`);
    default:
      // `conflict` too: the same sender sent the same Message-ID to the same address before, with
      // other params (a resend through another relay differs in its `received` header); the
      // message is taken by that run.
      return { runId: result.runId };
  }
}

/** The parsed message as the run's params (docs/triggers.md, "Email"). */
async function emailParams(raw: Uint8Array, message: IncomingEmail): Promise<JsonObject> {
  const mail = await PostalMime.parse(raw, { attachmentEncoding: "arraybuffer" });
  const headers: JsonObject = {};
  for (const h of mail.headers) if (!(h.key in headers)) headers[h.key] = h.value;
  return {
    from: message.from,
    to: message.to,
    subject: mail.subject ?? null,
    text: mail.text ?? null,
    html: mail.html ?? null,
    message_id: mail.messageId ?? null,
    date: mail.date ?? null,
    headers,
    attachments: mail.attachments.map((a) => ({
      filename: a.filename,
      content_type: a.mimeType,
      size:
        typeof a.content === "string" ? new TextEncoder().encode(a.content).byteLength : a.content.byteLength,
    })),
  };
}
