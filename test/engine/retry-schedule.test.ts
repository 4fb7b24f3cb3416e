/**
 * The retry schedule (src/engine/retry.ts) on a clock the test moves by hand: which answers are
 * tried again, the full-jitter back-off and its cap, `Retry-After`, the deadline that no wait
 * passes, what a step's own retry (`retryWork`) does with each failure, and how a failed
 * connection is described. Every wait is read from the timers the code sets, never slept.
 */
import { getEventListeners } from "node:events";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { Clock } from "../../src/engine/clock.ts";
import {
  AttemptTimeoutError,
  backoffDelay,
  isRetryableStatus,
  networkFailure,
  parseRetryAfter,
  redactUrls,
  retryHttp,
  retryWork,
} from "../../src/engine/retry.ts";

/** A clock whose time moves only when the test says; every timer set is recorded. */
function manualClock(start = 1_000_000) {
  let now = start;
  const timers: Array<{ ms: number; at: number; fn: () => void; cancelled: boolean; fired: boolean }> = [];
  const clock: Clock = {
    now: () => now,
    setTimer(fn, ms) {
      const t = { ms, at: now + Math.max(0, ms), fn, cancelled: false, fired: false };
      timers.push(t);
      return () => {
        t.cancelled = true;
      };
    },
  };
  const settle = async () => {
    for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
  };
  /** Moves time to the next live timer and fires it; false when none is left. */
  const next = async (): Promise<boolean> => {
    await settle();
    const live = timers.filter((t) => !t.cancelled && !t.fired).sort((a, b) => a.at - b.at)[0];
    if (!live) return false;
    now = Math.max(now, live.at);
    live.fired = true;
    live.fn();
    await settle();
    return true;
  };
  return { clock, timers, next, settle, now: () => now };
}

afterEach(() => vi.restoreAllMocks());

describe("which answers are tried again", () => {
  it.each([
    [408, true],
    [429, true],
    [500, true],
    [503, true],
    [599, true],
    [200, false],
    [400, false],
    [407, false],
    [409, false],
    [430, false],
    [499, false],
    [600, false],
  ])("status %i: %s", (status, retried) => {
    expect(isRetryableStatus(status)).toBe(retried);
  });
});

describe("Retry-After", () => {
  it("reads delta seconds, spaces around them, and an HTTP date; nothing else", () => {
    const now = Date.parse("2026-11-29T10:00:00Z");
    expect(parseRetryAfter(" 5 ", now)).toBe(5000);
    expect(parseRetryAfter("0", now)).toBe(0);
    expect(parseRetryAfter("Sun, 29 Nov 2026 10:00:30 GMT", now)).toBe(30_000);
    expect(parseRetryAfter("Sun, 29 Nov 2026 09:59:00 GMT", now)).toBe(0);
    expect(parseRetryAfter("5s", now)).toBeNull();
    expect(parseRetryAfter("in 5", now)).toBeNull();
    expect(parseRetryAfter("-5", now)).toBeNull();
    expect(parseRetryAfter("Sun, 29 Nov 2026 10:00:30", now)).toBeNull();
    // Only the whole IMF-fixdate: JavaScript's parser would read each of these as some time.
    expect(parseRetryAfter("x Sun, 29 Nov 2026 10:00:30 GMT", now)).toBeNull();
    expect(parseRetryAfter("Sun, 29 Nov 2026 10:00:30 GMT+0100", now)).toBeNull();
    expect(parseRetryAfter("Sun, 99 Foo 2026 99:99:99 GMT", now)).toBeNull();
    expect(parseRetryAfter(null, now)).toBeNull();
  });
});

describe("the back-off", () => {
  it("is full jitter under a ceiling that doubles from the base and stops at the cap", () => {
    vi.spyOn(Math, "random").mockReturnValue(0.5);
    expect([1, 2, 3, 4, 5].map((n) => backoffDelay(n, 250, 3000))).toEqual([125, 250, 500, 1000, 1500]);
    vi.spyOn(Math, "random").mockReturnValue(0);
    expect(backoffDelay(3, 250)).toBe(0);
  });

  it("caps at 8 s by default", () => {
    vi.spyOn(Math, "random").mockReturnValue(0.999_999);
    expect(backoffDelay(20, 250)).toBeCloseTo(8000, 0);
    expect(backoffDelay(20, 250)).toBeLessThan(8000);
  });
});

/** retryHttp's options on `m`: 3 attempts of up to 10 s each, a minute to the deadline, a run never aborted. */
const httpOptions = (
  m: ReturnType<typeof manualClock>,
  over: Partial<Parameters<typeof retryHttp>[1]> = {},
) => ({
  attempts: 3,
  perAttemptTimeoutMs: 10_000,
  deadline: m.now() + 60_000,
  signal: new AbortController().signal,
  clock: m.clock,
  ...over,
});

describe("retryHttp on a clock moved by hand", () => {
  const answers = (...statuses: number[]) => {
    const bodies: Array<{ canceled: boolean }> = [];
    const send = vi.fn(async (_signal: AbortSignal, attempt: number) => {
      const status = statuses[Math.min(attempt - 1, statuses.length - 1)] as number;
      const track = { canceled: false };
      bodies.push(track);
      const body = new ReadableStream({
        start(c) {
          c.enqueue(new TextEncoder().encode(`answer ${attempt}`));
          c.close();
        },
        cancel() {
          track.canceled = true;
        },
      });
      return new Response(status === 204 ? null : body, { status, headers: { "retry-after": "2" } });
    });
    return { send, bodies };
  };

  it("waits the Retry-After the answer gives, and frees each answer it does not return", async () => {
    const m = manualClock();
    const { send, bodies } = answers(503, 503, 200);
    const done = retryHttp(send, httpOptions(m));
    // Through the two waits, until the third attempt is made (its answer is returned, unread).
    while (send.mock.calls.length < 3 && (await m.next()));
    const res = await done;
    expect(await res.text()).toBe("answer 3");
    expect(send).toHaveBeenCalledTimes(3);
    // The waits between attempts: the two Retry-After sleeps (the 10 s attempt timers aside).
    expect(m.timers.filter((t) => t.ms !== 10_000).map((t) => t.ms)).toEqual([2000, 2000]);
    expect(bodies.map((b) => b.canceled)).toEqual([true, true, false]);
    // Every attempt's own timer is cancelled once its answer is in (the last once its body is read).
    expect(m.timers.filter((t) => t.ms === 10_000).every((t) => t.cancelled && !t.fired)).toBe(true);
  });

  it("returns the last attempt's retryable answer at once, with no wait after it", async () => {
    const m = manualClock();
    const { send, bodies } = answers(503);
    const done = retryHttp(send, httpOptions(m, { attempts: 2 }));
    while (send.mock.calls.length < 2 && (await m.next()));
    await m.settle();
    const res = await done;
    expect(res.status).toBe(503);
    expect(await res.text()).toBe("answer 2");
    expect(m.timers.filter((t) => t.ms !== 10_000).map((t) => t.ms)).toEqual([2000]);
    expect(bodies.map((b) => b.canceled)).toEqual([true, false]);
  });

  it("frees a retryable answer when the next attempt fails to connect", async () => {
    const m = manualClock();
    const track = { canceled: false };
    const send = vi.fn(async (_signal: AbortSignal, attempt: number) => {
      if (attempt === 2) throw new Error("Network connection lost.");
      const body = new ReadableStream({
        cancel() {
          track.canceled = true;
        },
      });
      return new Response(body, { status: 503, headers: { "retry-after": "1" } });
    });
    const done = retryHttp(send, httpOptions(m, { attempts: 2 }));
    const failed = expect(done).rejects.toThrow("Network connection lost.");
    while (send.mock.calls.length < 2 && (await m.next()));
    await failed;
    expect(track.canceled).toBe(true);
  });

  it("goes on past a retryable answer that has no body", async () => {
    const m = manualClock();
    const send = vi.fn(async (_signal: AbortSignal, attempt: number) =>
      attempt === 1
        ? new Response(null, { status: 503, headers: { "retry-after": "1" } })
        : new Response("ok", { status: 200 }),
    );
    const done = retryHttp(send, httpOptions(m));
    while (send.mock.calls.length < 2 && (await m.next()));
    const res = await done;
    expect(res.status).toBe(200);
    expect(send).toHaveBeenCalledTimes(2);
  });

  it("leaves no listener on the run's signal once the answer's body is read", async () => {
    const m = manualClock();
    const run = new AbortController();
    const { send } = answers(503, 200);
    const done = retryHttp(send, httpOptions(m, { signal: run.signal }));
    while (send.mock.calls.length < 2 && (await m.next()));
    const res = await done;
    expect(getEventListeners(run.signal, "abort")).toHaveLength(1);
    await res.text();
    await m.settle();
    expect(getEventListeners(run.signal, "abort")).toHaveLength(0);
  });

  it("throws the run's own reason when the run is aborted during its only attempt", async () => {
    const m = manualClock();
    const run = new AbortController();
    const reason = new Error("run canceled");
    const done = retryHttp(
      (signal) =>
        new Promise<Response>((_, reject) => {
          signal.addEventListener("abort", () => reject(new DOMException("aborted", "AbortError")));
          run.abort(reason);
        }),
      httpOptions(m, { attempts: 1, signal: run.signal }),
    );
    await expect(done).rejects.toBe(reason);
  });

  it("cancels the attempt's timer at once for an answer without a body", async () => {
    const m = manualClock();
    const { send } = answers(204);
    const res = await retryHttp(send, httpOptions(m));
    expect(res.status).toBe(204);
    expect(m.timers.map((t) => t.cancelled)).toEqual([true]);
  });

  it("waits until the deadline, and no longer, when the back-off would pass it, then returns the last answer", async () => {
    const m = manualClock();
    const { send } = answers(503);
    let settled = false;
    const done = retryHttp(send, {
      attempts: 3,
      perAttemptTimeoutMs: 10_000,
      deadline: m.now() + 1500,
      signal: new AbortController().signal,
      clock: m.clock,
    }).then((r) => {
      settled = true;
      return r;
    });
    await m.settle();
    expect(settled).toBe(false);
    while (await m.next());
    expect((await done).status).toBe(503);
    expect(send).toHaveBeenCalledTimes(1);
    // Its one wait: what was left of the deadline (Retry-After said 2 s).
    expect(m.timers.filter((t) => !t.cancelled).map((t) => t.ms)).toEqual([1500]);
  });

  it("sends nothing once the deadline is reached, to the millisecond", async () => {
    const m = manualClock();
    const { send } = answers(200);
    await expect(
      retryHttp(send, {
        attempts: 3,
        perAttemptTimeoutMs: 10_000,
        deadline: m.now(),
        signal: new AbortController().signal,
        clock: m.clock,
      }),
    ).rejects.toThrow("the deadline passed before the request could be sent");
    expect(send).not.toHaveBeenCalled();
  });

  it("throws the run's reason when the run is aborted between attempts", async () => {
    const m = manualClock();
    const ctl = new AbortController();
    const { send } = answers(503);
    const done = retryHttp(send, httpOptions(m, { signal: ctl.signal }));
    await m.settle();
    ctl.abort(new Error("run canceled"));
    await expect(done).rejects.toThrow("run canceled");
  });

  it("counts an attempt that outlives its timeout as a failure named by the time it had", async () => {
    const m = manualClock();
    const send = vi.fn(
      (signal: AbortSignal) =>
        new Promise<Response>((_, reject) => signal.addEventListener("abort", () => reject(signal.reason))),
    );
    const done = retryHttp(send, {
      attempts: 2,
      perAttemptTimeoutMs: 1500,
      deadline: m.now() + 60_000,
      signal: new AbortController().signal,
      clock: m.clock,
      baseDelayMs: 1,
    });
    const failed = done.catch((e: unknown) => e);
    while (await m.next());
    const err = (await failed) as Error;
    expect(err).toBeInstanceOf(AttemptTimeoutError);
    expect(err.name).toBe("AttemptTimeoutError");
    expect(err.message).toBe("no response within 1500 ms");
    expect(send).toHaveBeenCalledTimes(2);
    expect(new AttemptTimeoutError(2000).message).toBe("no response within 2 s");
  });

  it("describes a failure that says nothing as a network error", async () => {
    const m = manualClock();
    const done = retryHttp(
      async () => {
        throw new Error("");
      },
      {
        attempts: 1,
        perAttemptTimeoutMs: 1000,
        deadline: m.now() + 60_000,
        signal: new AbortController().signal,
        clock: m.clock,
      },
    );
    await expect(done).rejects.toThrow(/^network error$/);
  });
});

describe("retryWork: a step's own retry", () => {
  const options = (
    m: ReturnType<typeof manualClock>,
    over: Partial<Parameters<typeof retryWork>[0]> = {},
  ) => ({
    attempts: 3,
    baseDelayMs: 1000,
    maxBackoffMs: 60_000,
    deadline: m.now() + 600_000,
    signal: new AbortController().signal,
    clock: m.clock,
    retryable: () => true,
    ...over,
  });

  it("answers the first success, after back-offs of full jitter between the failures", async () => {
    vi.spyOn(Math, "random").mockReturnValue(0.5);
    const m = manualClock();
    const work = vi.fn(async (attempt: number) => {
      if (attempt < 3) throw new Error(`failure ${attempt}`);
      return "done";
    });
    const done = retryWork(options(m), work);
    while (await m.next());
    expect(await done).toBe("done");
    expect(work.mock.calls.map((c) => c[0])).toEqual([1, 2, 3]);
    expect(m.timers.map((t) => t.ms)).toEqual([500, 1000]);
  });

  it("throws the last failure once its attempts are used, and never fewer than one attempt", async () => {
    for (const [attempts, calls] of [
      [2, 2],
      [2.7, 2],
      [0, 1],
    ] as const) {
      const m = manualClock();
      const work = vi.fn(async (attempt: number) => {
        throw new Error(`failure ${attempt}`);
      });
      const done = retryWork(options(m, { attempts }), work).catch((e: Error) => e.message);
      while (await m.next());
      expect(await done).toBe(`failure ${calls}`);
      expect(work).toHaveBeenCalledTimes(calls);
    }
  });

  it("stops at a failure that is not worth another attempt", async () => {
    const m = manualClock();
    const work = vi.fn(async () => {
      throw new Error("budget");
    });
    await expect(retryWork(options(m, { retryable: () => false }), work)).rejects.toThrow("budget");
    expect(work).toHaveBeenCalledTimes(1);
    expect(m.timers).toEqual([]);
  });

  it("stops without waiting when the back-off would reach the deadline", async () => {
    vi.spyOn(Math, "random").mockReturnValue(0.5);
    const m = manualClock();
    const work = vi.fn(async () => {
      throw new Error("down");
    });
    await expect(retryWork(options(m, { deadline: m.now() + 500 }), work)).rejects.toThrow("down");
    expect(work).toHaveBeenCalledTimes(1);
    expect(m.timers).toEqual([]);
  });

  it("throws the run's reason, or the failure when there is none, once the run is aborted", async () => {
    const m = manualClock();
    const ctl = new AbortController();
    ctl.abort(new Error("canceled"));
    const work = async () => {
      throw new Error("failure");
    };
    await expect(retryWork(options(m, { signal: ctl.signal }), work)).rejects.toThrow("canceled");
    await expect(retryWork(options(m, { signal: ctl.signal, attempts: 1 }), work)).rejects.toThrow(
      "canceled",
    );
    const bare = new AbortController();
    bare.abort();
    Object.defineProperty(bare.signal, "reason", { value: undefined });
    await expect(retryWork(options(m, { signal: bare.signal }), work)).rejects.toThrow("failure");
  });

  it("uses the system clock when given none", async () => {
    const work = vi.fn(async () => "at once");
    const { clock: _clock, ...rest } = options(manualClock());
    expect(await retryWork({ ...rest, deadline: Date.now() + 60_000 }, work)).toBe("at once");
  });
});

describe("how a failed connection is told", () => {
  it("says what workerd's opaque messages mean", () => {
    for (const m of ["Network connection lost.", "network connection lost"]) {
      expect(networkFailure(new Error(m))).toBe(
        "the connection failed (refused, reset or closed before an answer)",
      );
    }
    expect(networkFailure(new Error("internal error; reference = abc123"))).toBe(
      "the host could not be reached (its name did not resolve, or the network refused the connection)",
    );
    expect(networkFailure(new Error("proxy said: Network connection lost. try later"))).toBe(
      "proxy said: Network connection lost. try later",
    );
    // workerd's message only when it is the whole message.
    expect(networkFailure(new Error("Network connection lost. Then: retry"))).toBe(
      "Network connection lost. Then: retry",
    );
    expect(networkFailure(new Error("proxy: Network connection lost."))).toBe(
      "proxy: Network connection lost.",
    );
    expect(networkFailure(new Error("see internal error; reference = x"))).toBe(
      "see internal error; reference = x",
    );
    expect(networkFailure("plain text")).toBe("plain text");
  });

  it("cuts every URL in a message to what may be shown, even one the URL parser refuses", () => {
    expect(redactUrls("GET https://user:pw@api.example.com/v1/x?token=abc#f failed")).toBe(
      "GET https://api.example.com/v1/x failed",
    );
    expect(redactUrls("GET https://api.example.com/v1/x?token=abc failed", true)).toBe(
      "GET https://api.example.com/… failed",
    );
    expect(redactUrls("to http://user:pw@[bad/x?token=abc#frag now")).toBe("to http://[bad/x now");
    expect(redactUrls("to http://[bad/x#frag")).toBe("to http://[bad/x");
  });
});
