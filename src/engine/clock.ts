/**
 * The clock the engine reads and waits on. Everything that depends on time (attempt timeouts,
 * retry back-offs, a sub-workflow's own `timeout_s`, signature timestamps, the run deadline
 * check) asks a Clock instead of `Date.now`/`setTimeout`, so the Worker passes the real one and
 * the workflow test runner a virtual one on which a 10-minute timeout takes no real time.
 */

export interface Clock {
  /** Epoch ms. */
  now(): number;
  /** Calls `fn` once after `ms` (0 when negative); returns a function that cancels it. */
  setTimer(fn: () => void, ms: number): () => void;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  setTimer(fn, ms) {
    const timer = setTimeout(fn, Math.max(0, ms));
    return () => clearTimeout(timer);
  },
};

/** Sleeps `ms` on `clock`, or rejects with the signal's reason as soon as it aborts. */
export function sleep(clock: Clock, ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      cancel();
      reject(signal.reason);
    };
    const cancel = clock.setTimer(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}
