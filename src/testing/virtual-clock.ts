/**
 * The virtual clock of workflow tests: a Clock whose time only moves when the run is waiting for
 * it. `run(work)` lets the engine do everything it can at the current instant; when nothing but
 * a timer can make progress, time jumps to the next timer and fires it. So attempt timeouts,
 * retry back-offs and a 10-minute deadline take no real time, and their order is exactly the
 * order of their virtual times.
 *
 * "Nothing can make progress" means: the event loop went round twice with no microtask work
 * left and no real asynchronous operation in flight. The only real asynchronous work the engine
 * does in Node is Web Crypto (signing a webhook runs on libuv's thread pool, outside the
 * microtask queue), so `crypto.subtle` calls are counted while they run: the clock never jumps
 * while a signature is being computed.
 */
import type { Clock } from "../engine/clock.ts";

interface Timer {
  at: number;
  seq: number;
  fn: () => void;
}

let realPending = 0;
let tracking = false;

const SUBTLE_METHODS = [
  "decrypt",
  "deriveBits",
  "deriveKey",
  "digest",
  "encrypt",
  "exportKey",
  "generateKey",
  "importKey",
  "sign",
  "unwrapKey",
  "verify",
  "wrapKey",
] as const;

/** Counts `crypto.subtle` operations in flight (installed once per process). */
function trackRealAsync(): void {
  if (tracking) return;
  tracking = true;
  const subtle = globalThis.crypto.subtle as unknown as Record<
    string,
    (...args: unknown[]) => Promise<unknown>
  >;
  for (const name of SUBTLE_METHODS) {
    const original = subtle[name];
    if (typeof original !== "function") continue;
    Object.defineProperty(subtle, name, {
      configurable: true,
      writable: true,
      value: (...args: unknown[]) => {
        realPending++;
        const p = original.apply(subtle, args);
        p.then(
          () => realPending--,
          () => realPending--,
        );
        return p;
      },
    });
  }
}

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Resolves once two event-loop turns in a row passed with no real asynchronous work in flight. */
async function quiescent(): Promise<void> {
  let quiet = 0;
  while (quiet < 2) {
    await turn();
    quiet = realPending === 0 ? quiet + 1 : 0;
  }
}

export class StuckRunError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "StuckRunError";
  }
}

export class VirtualClock implements Clock {
  private t: number;
  private seq = 0;
  private timers: Timer[] = [];
  readonly start: number;

  constructor(start: number) {
    this.t = start;
    this.start = start;
    trackRealAsync();
  }

  now(): number {
    return this.t;
  }

  setTimer(fn: () => void, ms: number): () => void {
    const delay = Number.isFinite(ms) && ms > 0 ? ms : 0;
    const timer: Timer = { at: this.t + delay, seq: this.seq++, fn };
    // Sorted by time, then by creation: equal times fire in the order they were set.
    let i = this.timers.length;
    while (i > 0 && (this.timers[i - 1] as Timer).at > timer.at) i--;
    this.timers.splice(i, 0, timer);
    return () => {
      const at = this.timers.indexOf(timer);
      if (at >= 0) this.timers.splice(at, 1);
    };
  }

  /** Virtual ms since the clock was made. */
  elapsed(): number {
    return this.t - this.start;
  }

  /**
   * Drives `work` to its end, advancing time whenever only a timer can make progress. Throws
   * StuckRunError when nothing is left to wait for, or when `realLimitMs` of real time pass.
   */
  async run<T>(work: Promise<T>, realLimitMs: number): Promise<T> {
    let settled = false;
    const watched = work.finally(() => {
      settled = true;
    });
    watched.catch(() => {});
    const realStart = performance.now();
    while (!settled) {
      await quiescent();
      if (settled) break;
      if (performance.now() - realStart > realLimitMs) {
        throw new StuckRunError(`the run did not end within ${realLimitMs / 1000} s of real time`);
      }
      const next = this.timers.shift();
      if (!next) throw new StuckRunError("the run is stuck: nothing is running and no timer is pending");
      this.t = Math.max(this.t, next.at);
      next.fn();
    }
    return watched;
  }
}
