/**
 * The webhook step (docs/file-format.md "Webhook step"): one outbound HTTP request with the
 * guarantees a receiver relies on: the same `Idempotency-Key` (and Standard Webhooks
 * `webhook-id`) on every retry, retries only where they are safe to repeat (network error,
 * timeout, 408, 429, 5xx), nothing sent to private hosts unless the operator allows it, no
 * redirects followed, and a bounded response. Error messages name the method and the URL as
 * `shownUrl` shows it: never its userinfo or query, and only its origin when it was built from a
 * secret.
 */
import type { HttpMethod, Json, JsonObject, WebhookStep } from "../bundle.ts";
import { MAX_JSON_DEPTH, nestsDeeperThan } from "../common/json-depth.ts";
import { importSigningKey, standardWebhookHeaders } from "../common/standard-webhooks.ts";
import { systemClock } from "../engine/clock.ts";
import { checkOutboundUrl, shownUrl } from "../engine/net.ts";
import { readCapped } from "../engine/read-capped.ts";
import { isRetryableStatus, networkFailure, retryHttp } from "../engine/retry.ts";
import { render, renderUrl, stringify } from "../engine/substitute.ts";
import { httpAttributes, httpOutcome } from "../engine/trace.ts";
import { setOwn } from "../engine/transform-ops.ts";
import { type StepContext, StepError, type StepExecutor } from "../engine/types.ts";

export const WEBHOOK_ATTEMPTS = 3;
/** Largest response body a webhook step records (docs/http-api.md: step output 1 MiB). */
export const MAX_RESPONSE_BYTES = 1024 * 1024;
const USER_AGENT = "workflow-edge";

function fail(message: string): StepError {
  return new StepError("webhook_failed", message);
}

/**
 * The step's URL, and whether it was built from a secret: the build says so when the url reads a
 * secret env var (in any way, docs/file-format.md "Env and secrets"), the run's masker when the
 * rendered text holds one; unknown counts as built from a secret.
 */
function parseTarget(step: WebhookStep, ctx: StepContext): { url: URL; fromSecret: boolean } {
  const rendered = renderUrl(step.url, ctx.scope);
  if (typeof rendered !== "string" || rendered.trim() === "") {
    throw fail("the webhook url did not render to a non-empty string");
  }
  const fromSecret = step.urlReadsSecret === true || (ctx.holdsSecret?.(rendered) ?? true);
  const url = checkOutboundUrl(rendered.trim(), ctx.env.ALLOW_PRIVATE_WEBHOOKS === "true");
  if (url instanceof URL) return { url, fromSecret };
  if (url.refused === "invalid") throw fail("the webhook url is not a valid absolute URL");
  if (url.refused === "scheme") {
    throw fail(`the webhook url must use http or https, not ${url.protocol.replace(/:$/, "")}`);
  }
  const parsed = new URL(rendered.trim());
  throw fail(
    `refused ${step.method} ${shownUrl(parsed, fromSecret)}: the host is local or private (set ALLOW_PRIVATE_WEBHOOKS=true to allow it)`,
  );
}

/** The step's own headers as strings; null values are left out, other non-strings become JSON. */
function userHeaders(step: WebhookStep, ctx: StepContext): Array<[string, string]> {
  if (step.headers === null) return [];
  const rendered = render(step.headers, ctx.scope);
  if (rendered === null || typeof rendered !== "object" || Array.isArray(rendered)) {
    throw fail("the webhook headers did not render to an object");
  }
  return Object.entries(rendered)
    .filter(([, v]) => v !== null)
    .map(([name, v]) => [name, stringify(v)]);
}

function requestBody(step: WebhookStep, ctx: StepContext): string | null {
  if (step.method === "GET" || step.method === "DELETE" || step.body === null) return null;
  return JSON.stringify(render(step.body, ctx.scope));
}

/** `msg_<run>_<path>`: stable across retries and restarts, in the characters ids usually use. */
export function webhookMessageId(runId: string, path: string): string {
  return `msg_${runId}_${path}`.replace(/[^A-Za-z0-9_.-]/g, "_");
}

/** Standard Webhooks headers for one attempt, or null when the step is not signed. */
async function createSigner(
  step: WebhookStep,
  ctx: StepContext,
): Promise<((body: string) => Promise<Array<[string, string]>>) | null> {
  if (step.sign === null) return null;
  const name = step.sign.secretEnv;
  const secret = ctx.env[name];
  if (!secret) throw fail(`the signing secret ${name} is not set`);
  let key: CryptoKey;
  try {
    key = await importSigningKey(secret);
  } catch {
    throw fail(`the signing secret ${name} is not of the form whsec_<base64>`);
  }
  const id = webhookMessageId(ctx.runId, ctx.path);
  return (body) => standardWebhookHeaders(key, id, (ctx.clock ?? systemClock).now(), body);
}

/** Reads at most MAX_RESPONSE_BYTES; more is output_too_large. */
function readResponse(res: Response, method: HttpMethod, target: string): Promise<Uint8Array> {
  return readCapped(
    res,
    MAX_RESPONSE_BYTES,
    () => new StepError("output_too_large", `the response of ${method} ${target} is larger than 1 MiB`),
  );
}

function isJsonType(contentType: string | null): boolean {
  if (!contentType) return false;
  const type = (contentType.split(";")[0] ?? "").trim().toLowerCase();
  return type === "application/json" || type.endsWith("+json");
}

/** What one attempt received, read in full within that attempt. */
interface Received {
  status: number;
  headers: Headers;
  bytes: Uint8Array;
}

function toOutput(received: Received, method: HttpMethod, target: string): Json {
  const headers: JsonObject = {};
  received.headers.forEach((value, name) => {
    setOwn(headers, name.toLowerCase(), value);
  });
  const text = new TextDecoder().decode(received.bytes);
  let body: Json = text;
  if (isJsonType(received.headers.get("content-type"))) {
    // Everything after the parse walks the value recursively (masking, storage, the envelope).
    if (nestsDeeperThan(text)) {
      throw new StepError(
        "response_too_deep",
        `the JSON answer of ${method} ${target} nests objects and arrays deeper than ${MAX_JSON_DEPTH} levels`,
      );
    }
    try {
      body = JSON.parse(text) as Json;
    } catch {
      // A JSON content type with a broken body: the text is still worth recording.
    }
  }
  return { status: received.status, headers, body };
}

export const executeWebhook: StepExecutor<WebhookStep> = async (step, ctx) => {
  const { url, fromSecret } = parseTarget(step, ctx);
  const body = requestBody(step, ctx);
  const custom = userHeaders(step, ctx);
  const sign = await createSigner(step, ctx);
  const method = step.method;
  const target = shownUrl(url, fromSecret);

  // The body is read inside the attempt (so the attempt timeout bounds a body that trickles
  // in) and kept here; retryHttp only needs the status and Retry-After of what it gets back.
  let received = null as Received | null;
  // docs/file-format.md: `retry.max_attempts` replaces the default of 3 (what is retried stays the same).
  const attemptsAllowed = step.retry?.maxAttempts ?? WEBHOOK_ATTEMPTS;
  const send = async (signal: AbortSignal, attempt: number): Promise<Response> => {
    received = null;
    const headers = new Headers({ "user-agent": USER_AGENT, "idempotency-key": `${ctx.runId}:${ctx.path}` });
    if (body !== null) headers.set("content-type", "application/json");
    try {
      for (const [name, value] of custom) headers.set(name, value);
    } catch {
      throw fail(`a header of ${method} ${target} has an invalid name or value`);
    }
    if (sign) for (const [name, value] of await sign(body ?? "")) headers.set(name, value);

    // One client span per attempt (docs/operations.md, "Traces"), its traceparent on the request.
    const span = ctx.trace?.client(method, httpAttributes(method, url, attempt, fromSecret));
    if (span) headers.set("traceparent", span.traceparent);
    let res: Response;
    try {
      res = await ctx.fetch(url.href, { method, headers, body, redirect: "manual", signal });
    } catch (err) {
      span?.end(httpOutcome(null, err), "the request failed");
      throw err;
    }
    span?.end(httpOutcome(res.status), res.status >= 400 ? String(res.status) : undefined);
    const summary = new Response(null, { status: res.status, headers: retryHeaders(res) });
    // A response we will retry is not read: its body does not matter and could be large.
    if (isRetryableStatus(res.status) && attempt < attemptsAllowed) {
      res.body?.cancel().catch(() => {});
      return summary;
    }
    received = { status: res.status, headers: res.headers, bytes: await readResponse(res, method, target) };
    return summary;
  };

  let attempts = 0;
  let res: Response;
  try {
    res = await retryHttp(send, {
      attempts: attemptsAllowed,
      ...(step.retry ? { baseDelayMs: step.retry.backoffMs, maxBackoffMs: step.retry.maxBackoffMs } : {}),
      perAttemptTimeoutMs: step.timeoutS * 1000,
      deadline: ctx.deadline,
      signal: ctx.signal,
      clock: ctx.clock,
      onAttempt: (n) => {
        attempts = n;
        ctx.metrics.attempts += 1;
      },
    });
  } catch (err) {
    if (ctx.signal.aborted) throw ctx.signal.reason;
    if (err instanceof StepError) throw err;
    throw fail(`${method} ${target} failed after ${plural(attempts)}: ${networkFailure(err, fromSecret)}`);
  }

  if (res.status < 200 || res.status > 299 || received === null) {
    const redirect = res.status >= 300 && res.status < 400 ? " (redirects are not followed)" : "";
    throw fail(`${method} ${target} answered ${res.status} after ${plural(attempts)}${redirect}`);
  }
  return toOutput(received, method, target);
};

/** Only what the retry loop reads (rebuilding all headers could carry a stale Content-Encoding). */
function retryHeaders(res: Response): Headers {
  const headers = new Headers();
  const retryAfter = res.headers.get("retry-after");
  if (retryAfter !== null) headers.set("retry-after", retryAfter);
  return headers;
}

function plural(attempts: number): string {
  return attempts === 1 ? "1 attempt" : `${attempts} attempts`;
}
