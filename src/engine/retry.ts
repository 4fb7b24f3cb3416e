/**
 * One retry loop for every outbound HTTP call (webhook steps, model providers), so the rules
 * docs/file-format.md fixes for webhooks hold everywhere: at most N attempts, each with its own
 * timeout, full-jitter exponential back-off, `Retry-After` honoured, and nothing (no attempt,
 * no sleep) past the run deadline. The run signal (deadline, cancel, run failure) stops the
 * loop at once. Pure: time comes from a Clock (the system one unless the caller passes another),
 * so it runs the same in Node and workerd, and on a test's virtual clock.
 */
import { type Clock, sleep, systemClock } from "./clock.ts";
import { shownUrl } from "./net.ts";
import { StepError } from "./types.ts";

export interface HttpRetryOptions {
  /** Total attempts (3 for webhooks and providers). */
  attempts: number;
  /** An attempt that takes longer is aborted and counts as a network error. */
  perAttemptTimeoutMs: number;
  /** Epoch ms; never start an attempt or sleep past it. */
  deadline: number;
  /** Run-level abort (deadline/cancel): stop at once, rethrow its reason. */
  signal: AbortSignal;
  /** Default 250; full-jitter exponential back-off, capped at `maxBackoffMs`. */
  baseDelayMs?: number;
  /** Default MAX_BACKOFF_MS (8 s); a step's `retry.max_backoff_s` sets its own. */
  maxBackoffMs?: number;
  /** Called before each attempt (1-based), for metrics.attempts. */
  onAttempt?: (attempt: number) => void;
  /** Time and timers (attempt timeouts, back-offs); default the system clock. */
  clock?: Clock;
}

const DEFAULT_BASE_DELAY_MS = 250;
const MAX_BACKOFF_MS = 8_000;

/** Thrown when an attempt ran out of its own time (not the run's). */
export class AttemptTimeoutError extends Error {
  constructor(ms: number) {
    super(`no response within ${formatMs(ms)}`);
    this.name = "AttemptTimeoutError";
  }
}

/** 408, 429 and 5xx mean "try again later"; every other status is the server's final word. */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 429 || (status >= 500 && status <= 599);
}

/** RFC 9110's IMF-fixdate, the HTTP date servers send: `Sun, 06 Nov 1994 08:49:37 GMT`. */
const HTTP_DATE = /^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$/;

/**
 * Parses `Retry-After` (delta seconds or an HTTP date) into a delay in ms from `now`;
 * null when absent or unreadable (JavaScript's lenient date parser is not asked to guess).
 */
export function parseRetryAfter(value: string | null, now: number): number | null {
  if (value === null) return null;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  if (!HTTP_DATE.test(text)) return null;
  const date = Date.parse(text);
  if (Number.isNaN(date)) return null;
  return Math.max(0, date - now);
}

/** Full jitter (AWS architecture blog): uniform in [0, min(cap, base * 2^(n-1))]. */
export function backoffDelay(attempt: number, baseDelayMs: number, maxBackoffMs = MAX_BACKOFF_MS): number {
  const ceiling = Math.min(maxBackoffMs, baseDelayMs * 2 ** (attempt - 1));
  return Math.random() * ceiling;
}

/**
 * What a failed connection was, in words a user can act on. workerd's own messages say little
 * (`Network connection lost.` for a refused, reset or dropped connection; `internal error;
 * reference = …` for a host it could not resolve), so they are said plainly; any other message
 * is kept, its URLs redacted.
 */
export function networkFailure(err: unknown, fromSecret = false): string {
  const message = err instanceof Error ? err.message : String(err);
  if (/^Network connection lost\.?$/i.test(message)) {
    return "the connection failed (refused, reset or closed before an answer)";
  }
  if (/^internal error; reference = /i.test(message)) {
    return "the host could not be reached (its name did not resolve, or the network refused the connection)";
  }
  return redactUrls(message, fromSecret);
}

/**
 * Runtime error messages sometimes quote the URL they failed on; its userinfo and query may
 * hold secrets, so every URL in `text` is cut down to what `shownUrl` shows (origin + path, or
 * the origin alone when the request's URL was built from a secret).
 */
export function redactUrls(text: string, fromSecret = false): string {
  return text.replace(/\b[a-z][a-z0-9+.-]*:\/\/[^\s"'<>]+/gi, (raw) => {
    try {
      return shownUrl(new URL(raw), fromSecret);
    } catch {
      // Stryker disable next-line Regex: the URL matched has no line break, so `.*` runs to its end either way
      return raw.replace(/\/\/[^/@\s]*@/, "//").replace(/[?#].*$/, "");
    }
  });
}

function formatMs(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`;
}

function networkError(err: unknown): Error {
  if (err instanceof AttemptTimeoutError) return err;
  const message = err instanceof Error ? err.message : String(err);
  return new Error(redactUrls(message || "network error"));
}

/**
 * Keeps a returned response bound to its attempt (timeout and run signal) only until its body has
 * been read: a timer left armed after that would keep the object busy for the whole attempt
 * timeout (and stop a Durable Object from being evicted).
 */
function armedUntilRead(res: Response, release: () => void): Response {
  if (!res.body) {
    release();
    return res;
  }
  const relay = new TransformStream<Uint8Array, Uint8Array>({ flush: release });
  res.body.pipeTo(relay.writable).catch(release);
  return new Response(relay.readable, {
    status: res.status,
    statusText: res.statusText,
    headers: res.headers,
  });
}

/** Frees the connection of a response we are not going to read. */
function discard(res: Response): void {
  res.body?.cancel().catch(() => {});
}

/**
 * Retries on network error / attempt timeout / 408 / 429 / 5xx; honours Retry-After (seconds
 * or HTTP date). A back-off that would pass the deadline waits until the deadline, then the last
 * response is returned (or the last error thrown), unless the run signal aborted first. Returns the
 * final Response (possibly non-2xx) or throws the last network error (an Error whose message
 * names no URL query/secret). `send` receives an AbortSignal combining the run signal and the
 * attempt timeout; it stays armed for the returned response, so read its body promptly: the
 * read is aborted at the attempt's timeout or when the run is aborted. A StepError thrown by `send` is not a network error: it stops the loop and
 * propagates as is (e.g. output_too_large while reading the body inside the attempt).
 */
export async function retryHttp(
  send: (signal: AbortSignal, attempt: number) => Promise<Response>,
  opts: HttpRetryOptions,
): Promise<Response> {
  const base = opts.baseDelayMs ?? DEFAULT_BASE_DELAY_MS;
  const clock = opts.clock ?? systemClock;
  const attempts = Math.max(1, Math.floor(opts.attempts));
  let lastResponse: Response | null = null;
  let lastError: Error | null = null;

  const giveUp = (): Response => {
    if (lastResponse) return lastResponse;
    throw lastError ?? new Error("the deadline passed before the request could be sent");
  };

  for (let attempt = 1; attempt <= attempts; attempt++) {
    if (opts.signal.aborted) throw opts.signal.reason;
    const remaining = opts.deadline - clock.now();
    if (remaining <= 0) return giveUp();

    opts.onAttempt?.(attempt);
    const timeoutMs = Math.min(opts.perAttemptTimeoutMs, remaining);
    const attemptAbort = new AbortController();
    const cancelTimer = clock.setTimer(
      () => attemptAbort.abort(new AttemptTimeoutError(timeoutMs)),
      timeoutMs,
    );
    const onRunAbort = () => attemptAbort.abort(opts.signal.reason);
    // Stryker disable next-line ObjectLiteral,BooleanLiteral: the listener is removed after the attempt either way (finally, or once its body is read)
    opts.signal.addEventListener("abort", onRunAbort, { once: true });

    let retryAfterMs: number | null = null;
    let returned = false;
    try {
      const res = await send(attemptAbort.signal, attempt);
      if (lastResponse) discard(lastResponse);
      if (!isRetryableStatus(res.status) || attempt === attempts) {
        // The caller reads the body next: it stays bound to this attempt's timeout and to
        // the run signal, so a body that stalls is aborted like a response that never came.
        returned = true;
        return armedUntilRead(res, () => {
          cancelTimer();
          opts.signal.removeEventListener("abort", onRunAbort);
        });
      }
      lastResponse = res;
      lastError = null;
      retryAfterMs = parseRetryAfter(res.headers.get("retry-after"), clock.now());
    } catch (err) {
      if (opts.signal.aborted) throw opts.signal.reason;
      if (err instanceof StepError) throw err;
      // An attempt aborted by its own timer surfaces as a generic AbortError from fetch.
      const reason = attemptAbort.signal.aborted ? attemptAbort.signal.reason : err;
      lastError = networkError(reason);
      if (lastResponse) discard(lastResponse);
      lastResponse = null;
      if (attempt === attempts) throw lastError;
    } finally {
      if (!returned) {
        cancelTimer();
        opts.signal.removeEventListener("abort", onRunAbort);
      }
    }

    const delay = retryAfterMs ?? backoffDelay(attempt, base, opts.maxBackoffMs);
    // Stryker disable next-line EqualityOperator: a back-off ending at the deadline itself leaves no time for an attempt either (the loop's next turn gives up)
    if (clock.now() + delay >= opts.deadline) {
      // Waiting out the back-off is all that is left, and it outlasts the run: wait until the
      // deadline (which then ends the run as a timeout) rather than fail the step early.
      const left = opts.deadline - clock.now();
      if (left > 0) await sleep(clock, left, opts.signal);
      return giveUp();
    }
    await sleep(clock, delay, opts.signal);
  }
  return giveUp();
}

/** What `retryWork` needs of the step it retries. */
export interface WorkRetry {
  /** Attempts in all (1: no retry). */
  attempts: number;
  baseDelayMs: number;
  maxBackoffMs: number;
  /** Epoch ms: no attempt starts and no back-off ends past it. */
  deadline: number;
  signal: AbortSignal;
  clock?: Clock;
  /** Whether this failure is worth another attempt (a provider error, a timeout). */
  retryable(err: unknown): boolean;
}

/**
 * Runs `work` up to `attempts` times with full-jitter exponential back-off between attempts
 * (docs/file-format.md's `retry` of a step that is not one HTTP request: an agent's completion, a Workers AI
 * call). A failure that is not retryable, an abort, or a back-off that would outlast the deadline
 * ends it with the last error.
 */
export async function retryWork<T>(opts: WorkRetry, work: (attempt: number) => Promise<T>): Promise<T> {
  const clock = opts.clock ?? systemClock;
  const attempts = Math.max(1, Math.floor(opts.attempts));
  for (let attempt = 1; ; attempt++) {
    try {
      return await work(attempt);
    } catch (err) {
      if (opts.signal.aborted) throw opts.signal.reason ?? err;
      if (attempt >= attempts || !opts.retryable(err)) throw err;
      const delay = backoffDelay(attempt, opts.baseDelayMs, opts.maxBackoffMs);
      if (clock.now() + delay >= opts.deadline) throw err;
      await sleep(clock, delay, opts.signal);
    }
  }
}
