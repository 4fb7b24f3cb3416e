/**
 * The queue trigger (docs/triggers.md, "Queues"): the Worker's `queue()` handler starts one run of
 * the workflow whose `invoke.queue` names the batch's queue for each message, `params` = the
 * message body (a JSON object, checked against params.schema), `request` = `{queue, message_id,
 * attempts}`. The run is created with idempotency key `queue:<queue>:<message id>`, so a message
 * delivered again reaches the run that exists.
 *
 * Every message is settled on its own, never the batch as a whole: acked once its run is durably
 * created (the run's object answered; not when the run ends); retried when it is not. A body that
 * is not a JSON object or fails params.schema is retried, so after the consumer's `max_retries`
 * it reaches the dead-letter queue, with a `queue.rejected` log line naming the queue, the message
 * id and the code; a full key queue (`queue_full`) or a rate limit retries it after its
 * `Retry-After` (`queue.retried`). Flow control applies as to any invoke.
 */
import workflowBundle from "workflow-bundle";
import type { Bundle, JsonObject } from "../../bundle.ts";
import { isObject } from "../../common/guards.ts";
import { MAX_JSON_DEPTH, nestsDeeperThan, valueNestsDeeperThan } from "../../common/json-depth.ts";
import { HttpProblem } from "../../common/problem.ts";
import { RunRefusal } from "../../run/refusal.ts";
import { recordRequest } from "../../run/start/run-request.ts";
import type { StartOutcome } from "../../run/start/start-run.ts";
import { invocableWorkflow, startFromEvent } from "../event-start.ts";

const bundle: Bundle = workflowBundle;

/** Longest delay a retry may ask for (Cloudflare Queues: 12 hours). */
const MAX_DELAY_S = 43_200;

/** One line of the Workers log about a message that was not acked this time. */
interface QueueLine {
  event: "queue.rejected" | "queue.retried";
  queue: string;
  message_id: string;
  attempts: number;
  code: string;
  detail: string;
  errors?: Array<{ path: string; message: string }>;
  delay_s?: number;
}

/** What became of one message: acked, or retried (after `delayS`) with the line that says why. */
export type Settled = { ack: true; runId: string } | { ack: false; delayS: number; line: QueueLine };

/** The Worker's `queue()` handler: every message of the batch settled on its own. */
export async function consumeBatch(batch: MessageBatch<unknown>, env: Env): Promise<void> {
  // One batch is of one queue: its workflow is found once.
  const target = invocableWorkflow((wf) => wf.queue === batch.queue);
  await Promise.all(
    batch.messages.map(async (msg) => {
      const settled = await settleMessage(batch.queue, target, msg, env);
      if (settled.ack) {
        msg.ack();
        return;
      }
      const line = settled.line;
      if (line.event === "queue.rejected") console.error(JSON.stringify(line));
      else console.warn(JSON.stringify(line));
      msg.retry(settled.delayS > 0 ? { delaySeconds: Math.min(settled.delayS, MAX_DELAY_S) } : undefined);
    }),
  );
}

/** Starts the run of one message of `queue` (its workflow: `target`) and says whether to ack it. */
async function settleMessage(
  queue: string,
  target: ReturnType<typeof invocableWorkflow>,
  msg: Message<unknown>,
  env: Env,
): Promise<Settled> {
  const base = { queue, message_id: msg.id, attempts: msg.attempts };
  const rejected = (code: string, detail: string, errors?: QueueLine["errors"]): Settled => ({
    ack: false,
    delayS: 0,
    line: { event: "queue.rejected", ...base, code, detail, ...(errors ? { errors } : {}) },
  });
  const retried = (code: string, detail: string, delayS: number): Settled => ({
    ack: false,
    delayS,
    line: { event: "queue.retried", ...base, code, detail, delay_s: delayS },
  });
  if (bundle.buildErrors?.length) {
    return retried("build_failed", "the workflows do not build (npm start shows the errors)", 10);
  }
  if (!target) return rejected("no_workflow", `no workflow has \`invoke.queue: ${queue}\``);
  const { key, wf } = target;
  const params = bodyParams(msg.body);
  if (params === "too_deep") {
    return rejected("invalid_json", `the message body nests deeper than ${MAX_JSON_DEPTH} levels`);
  }
  if (params === null) {
    return rejected("invalid_json", "the message body is not a JSON object");
  }
  const request: JsonObject = {
    ...recordRequest(wf.invoke.headers, new Headers()),
    queue,
    message_id: msg.id,
    attempts: msg.attempts,
  };
  let result: StartOutcome;
  try {
    result = await startFromEvent(env, {
      key,
      wf,
      params,
      request,
      idempotencyKey: `queue:${queue}:${msg.id}`,
    });
  } catch (e) {
    if (e instanceof RunRefusal) return rejected(e.code, e.message, e.errors);
    // A rate limit binding missing from wrangler.toml (fail closed, as an invoke would).
    if (e instanceof HttpProblem) return rejected(e.code, e.message);
    // The run's object did not answer: nothing is known to exist; the message comes again.
    return retried("internal_error", "the run could not be created; the message is delivered again", 0);
  }
  switch (result.outcome) {
    case "rate_limited": {
      const periodS = wf.invoke.rateLimit?.periodS ?? 60;
      return retried("rate_limited", `too many runs of ${wf.name}`, periodS);
    }
    case "queue_full":
      return retried("queue_full", `${wf.name}'s queue for this key is full`, result.retryAfterS);
    case "conflict":
      // Another body already started a run under this message's id: not this message's run.
      return rejected("idempotency_conflict", `a run of ${wf.name} for this message id has another body`);
    default:
      return { ack: true, runId: result.runId };
  }
}

/**
 * The message body as params: an object sent as JSON or structured clone, or JSON text (sent as
 * `text` or `bytes`). Anything else (an array, a number, a Date, a Map, text that is not JSON) is
 * null; one nested deeper than MAX_JSON_DEPTH is `too_deep` (walking it would overflow the stack).
 */
function bodyParams(body: unknown): JsonObject | null | "too_deep" {
  let value = body;
  if (body instanceof ArrayBuffer || ArrayBuffer.isView(body)) {
    const bytes =
      body instanceof ArrayBuffer
        ? new Uint8Array(body)
        : new Uint8Array(body.buffer, body.byteOffset, body.byteLength);
    value = new TextDecoder().decode(bytes);
  }
  if (typeof value === "string") {
    // Deep documents are refused before they are parsed (docs/errors-and-limits.md).
    if (nestsDeeperThan(value)) return "too_deep";
    try {
      value = JSON.parse(value);
    } catch {
      return null;
    }
  } else if (valueNestsDeeperThan(value)) return "too_deep";
  return isObject(value) && isPlainJson(value) ? (value as JsonObject) : null;
}

/** Plain JSON values only (a structured-clone body may hold Dates, Maps, typed arrays). */
function isPlainJson(v: unknown): boolean {
  if (v === null || typeof v === "string" || typeof v === "boolean") return true;
  if (typeof v === "number") return Number.isFinite(v);
  if (Array.isArray(v)) return v.every(isPlainJson);
  if (typeof v !== "object") return false;
  const proto = Object.getPrototypeOf(v);
  return (proto === Object.prototype || proto === null) && Object.values(v).every(isPlainJson);
}
