/**
 * The retry loop behind webhook steps and model providers: which answers are retried, how
 * often, how long it waits, and that neither the deadline nor the run signal is ever outrun.
 * `send` is injected; time-dependent cases run on vitest's fake clock so they assert exact
 * waits without sleeping.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { parseRetryAfter, retryHttp } from "../../src/engine/retry.ts";
import { StepError } from "../../src/engine/types.ts";

const FAR = () => Date.now() + 60_000;

function options(overrides: Partial<Parameters<typeof retryHttp>[1]> = {}) {
  return {
    attempts: 3,
    perAttemptTimeoutMs: 1_000,
    deadline: FAR(),
    signal: new AbortController().signal,
    baseDelayMs: 1,
    ...overrides,
  };
}

/** A `send` that answers the given statuses in order (the last one repeats). */
function statuses(...codes: number[]) {
  const calls: number[] = [];
  const send = async (_signal: AbortSignal, attempt: number) => {
    calls.push(attempt);
    const status = codes[Math.min(attempt - 1, codes.length - 1)] ?? 200;
    return new Response(`answer ${attempt}`, { status });
  };
  return { send, calls };
}

function hangUntilAborted(signal: AbortSignal): Promise<Response> {
  return new Promise((_, reject) => {
    signal.addEventListener("abort", () => reject(new DOMException("aborted", "AbortError")));
  });
}

afterEach(() => {
  vi.useRealTimers();
});

describe("retryHttp", () => {
  it("returns a 2xx answer after one attempt", async () => {
    const { send, calls } = statuses(200);
    const res = await retryHttp(send, options());
    expect(res.status).toBe(200);
    expect(calls).toEqual([1]);
  });

  it("retries 503 twice and returns the 200 of the third attempt", async () => {
    const { send, calls } = statuses(503, 503, 200);
    const seen: number[] = [];
    const res = await retryHttp(send, options({ onAttempt: (n) => seen.push(n) }));
    expect(res.status).toBe(200);
    expect(await res.text()).toBe("answer 3");
    expect(calls).toEqual([1, 2, 3]);
    expect(seen).toEqual([1, 2, 3]);
  });

  it.each([408, 429, 500, 502, 599])("retries status %i", async (status) => {
    const { send, calls } = statuses(status, 201);
    const res = await retryHttp(send, options());
    expect(res.status).toBe(201);
    expect(calls).toEqual([1, 2]);
  });

  it.each([400, 401, 404, 409, 422, 301])("returns status %i at once without retrying", async (status) => {
    const { send, calls } = statuses(status, 200);
    const res = await retryHttp(send, options());
    expect(res.status).toBe(status);
    expect(calls).toEqual([1]);
  });

  it("returns the last retryable answer when all attempts are used", async () => {
    const { send, calls } = statuses(503);
    const res = await retryHttp(send, options());
    expect(res.status).toBe(503);
    expect(await res.text()).toBe("answer 3");
    expect(calls).toEqual([1, 2, 3]);
  });

  it("honours the attempts option", async () => {
    const { send, calls } = statuses(503);
    await retryHttp(send, options({ attempts: 5 }));
    expect(calls).toEqual([1, 2, 3, 4, 5]);
  });

  it("retries a network error and returns the later answer", async () => {
    let n = 0;
    const res = await retryHttp(async () => {
      n++;
      if (n === 1) throw new TypeError("fetch failed");
      return new Response("ok");
    }, options());
    expect(res.status).toBe(200);
    expect(n).toBe(2);
  });

  it("throws the last network error after all attempts, without the URL's query or userinfo", async () => {
    let n = 0;
    const attempt = retryHttp(async () => {
      n++;
      throw new TypeError("connect ECONNREFUSED https://user:pw@hooks.example/x?token=SECRET1 failed");
    }, options());
    await expect(attempt).rejects.toThrow(/ECONNREFUSED https:\/\/hooks\.example\/x failed/);
    await attempt.catch((e: Error) => {
      expect(e.message).not.toContain("SECRET1");
      expect(e.message).not.toContain("pw");
    });
    expect(n).toBe(3);
  });

  it("aborts an attempt that outlives perAttemptTimeoutMs and counts it as a network error", async () => {
    const signals: AbortSignal[] = [];
    const attempt = retryHttp(
      (signal) => {
        signals.push(signal);
        return hangUntilAborted(signal);
      },
      options({ perAttemptTimeoutMs: 20 }),
    );
    await expect(attempt).rejects.toThrow("no response within 20 ms");
    expect(signals).toHaveLength(3);
    expect(signals.every((s) => s.aborted)).toBe(true);
  });

  it("stops at once and rethrows the run signal's reason when the run is aborted mid-attempt", async () => {
    const run = new AbortController();
    const reason = new StepError("canceled", "run canceled");
    let n = 0;
    const attempt = retryHttp(
      (signal) => {
        n++;
        setTimeout(() => run.abort(reason), 5);
        return hangUntilAborted(signal);
      },
      options({ signal: run.signal }),
    );
    await expect(attempt).rejects.toBe(reason);
    expect(n).toBe(1);
  });

  it("stops during the back-off sleep when the run is aborted", async () => {
    const run = new AbortController();
    const reason = new StepError("timeout", "deadline");
    const { send, calls } = statuses(503);
    const attempt = retryHttp(
      async (signal, n) => {
        const res = await send(signal, n);
        setTimeout(() => run.abort(reason), 5);
        return res;
      },
      options({ signal: run.signal, baseDelayMs: 10_000 }),
    );
    await expect(attempt).rejects.toBe(reason);
    expect(calls).toEqual([1]);
  });

  it("keeps the returned response bound to the run signal, so a stalled body read is aborted on cancel", async () => {
    const run = new AbortController();
    let attemptSignal: AbortSignal | undefined;
    await retryHttp(
      async (signal) => {
        attemptSignal = signal;
        return new Response("ok");
      },
      options({ signal: run.signal }),
    );
    expect(attemptSignal?.aborted).toBe(false);
    run.abort(new Error("canceled"));
    expect(attemptSignal?.aborted).toBe(true);
  });

  it("keeps the returned response bound to the attempt timeout, so a body that trickles is cut off", async () => {
    vi.useFakeTimers();
    let attemptSignal: AbortSignal | undefined;
    await retryHttp(
      async (signal) => {
        attemptSignal = signal;
        return new Response("ok");
      },
      options({ perAttemptTimeoutMs: 1_000 }),
    );
    await vi.advanceTimersByTimeAsync(999);
    expect(attemptSignal?.aborted).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(attemptSignal?.aborted).toBe(true);
  });

  it("sends nothing when the run is already aborted", async () => {
    const run = new AbortController();
    run.abort(new Error("gone"));
    const { send, calls } = statuses(200);
    await expect(retryHttp(send, options({ signal: run.signal }))).rejects.toThrow("gone");
    expect(calls).toEqual([]);
  });

  it("sends nothing when the deadline has already passed", async () => {
    const { send, calls } = statuses(200);
    await expect(retryHttp(send, options({ deadline: Date.now() - 1 }))).rejects.toThrow(/deadline/);
    expect(calls).toEqual([]);
  });

  it("propagates a StepError thrown by send without retrying", async () => {
    let n = 0;
    const err = new StepError("output_too_large", "too big");
    await expect(
      retryHttp(async () => {
        n++;
        throw err;
      }, options()),
    ).rejects.toBe(err);
    expect(n).toBe(1);
  });

  it("waits the Retry-After seconds before the next attempt", async () => {
    vi.useFakeTimers();
    const times: number[] = [];
    const promise = retryHttp(async () => {
      times.push(Date.now());
      return times.length === 1
        ? new Response("slow down", { status: 429, headers: { "retry-after": "7" } })
        : new Response("ok");
    }, options());
    await vi.advanceTimersByTimeAsync(7_000);
    const res = await promise;
    expect(res.status).toBe(200);
    expect(times).toHaveLength(2);
    expect((times[1] ?? 0) - (times[0] ?? 0)).toBe(7_000);
  });

  it("waits until a Retry-After HTTP date", async () => {
    vi.useFakeTimers({ now: new Date("2030-01-01T00:00:00Z") });
    const times: number[] = [];
    const promise = retryHttp(async () => {
      times.push(Date.now());
      return times.length === 1
        ? new Response("", { status: 503, headers: { "retry-after": "Tue, 01 Jan 2030 00:00:04 GMT" } })
        : new Response("ok");
    }, options());
    await vi.advanceTimersByTimeAsync(4_000);
    expect((await promise).status).toBe(200);
    expect((times[1] ?? 0) - (times[0] ?? 0)).toBe(4_000);
  });

  it("waits until the deadline, not past it, when a Retry-After would pass it, then returns the 429", async () => {
    vi.useFakeTimers();
    const { calls, send } = {
      calls: [] as number[],
      send: async (_s: AbortSignal, n: number) => {
        calls.push(n);
        return new Response("later", { status: 429, headers: { "retry-after": "120" } });
      },
    };
    const start = Date.now();
    const promise = retryHttp(send, options({ deadline: start + 5_000 }));
    await vi.advanceTimersByTimeAsync(5_000);
    const res = await promise;
    expect(res.status).toBe(429);
    expect(calls).toEqual([1]);
    expect(Date.now() - start).toBe(5_000);
  });

  it("does not start an attempt whose back-off would pass the deadline", async () => {
    vi.useFakeTimers();
    vi.spyOn(Math, "random").mockReturnValue(0.99);
    const { send, calls } = statuses(503);
    // Back-off of attempt 1 is ~990 ms, past the 500 ms deadline.
    const promise = retryHttp(send, options({ baseDelayMs: 1_000, deadline: Date.now() + 500 }));
    await vi.advanceTimersByTimeAsync(500);
    const res = await promise;
    expect(res.status).toBe(503);
    expect(calls).toEqual([1]);
    vi.restoreAllMocks();
  });

  it("shortens the attempt timeout to the time left before the deadline", async () => {
    vi.useFakeTimers();
    const promise = retryHttp(
      hangUntilAborted,
      options({ perAttemptTimeoutMs: 30_000, deadline: Date.now() + 200 }),
    );
    const outcome = expect(promise).rejects.toThrow("no response within 200 ms");
    await vi.advanceTimersByTimeAsync(200);
    await outcome;
  });
});

describe("parseRetryAfter", () => {
  it("reads delta seconds", () => {
    expect(parseRetryAfter("3", 0)).toBe(3_000);
  });

  it("reads an HTTP date relative to now", () => {
    const now = Date.parse("2030-01-01T00:00:00Z");
    expect(parseRetryAfter("Tue, 01 Jan 2030 00:00:10 GMT", now)).toBe(10_000);
  });

  it("treats a date in the past as no wait", () => {
    expect(parseRetryAfter("Tue, 01 Jan 2000 00:00:10 GMT", Date.now())).toBe(0);
  });

  it("ignores a missing or unreadable value", () => {
    expect(parseRetryAfter(null, 0)).toBeNull();
    expect(parseRetryAfter("soon", 0)).toBeNull();
  });
});
