/**
 * The virtual clock moves only when the run waits for it: timers fire in the order of their
 * virtual times, never while real work (Web Crypto on the thread pool) is still running, and a
 * run that waits for nothing at all is reported instead of hanging.
 */
import { describe, expect, it } from "vitest";
import { sleep } from "../../src/engine/clock.ts";
import { StuckRunError, VirtualClock } from "../../src/testing/virtual-clock.ts";

describe("VirtualClock", () => {
  it("fires timers in virtual-time order and ends at the last one", async () => {
    const clock = new VirtualClock(1_000);
    const fired: string[] = [];
    const never = new AbortController().signal;
    const work = Promise.all([
      sleep(clock, 30_000, never).then(() => fired.push(`b@${clock.now()}`)),
      sleep(clock, 10_000, never).then(() => fired.push(`a@${clock.now()}`)),
      sleep(clock, 10_000, never)
        .then(() => sleep(clock, 5_000, never))
        .then(() => fired.push(`c@${clock.now()}`)),
    ]);
    await clock.run(work, 5_000);
    expect(fired).toEqual(["a@11000", "c@16000", "b@31000"]);
    expect(clock.elapsed()).toBe(30_000);
  });

  it("does not move while Web Crypto work is in flight", async () => {
    const clock = new VirtualClock(0);
    const order: string[] = [];
    // A digest of 64 MiB runs on the thread pool for many event-loop turns.
    const hashed = crypto.subtle
      .digest("SHA-256", new Uint8Array(64 * 1024 * 1024))
      .then(() => order.push(`digest@${clock.now()}`));
    const timer = sleep(clock, 1, new AbortController().signal).then(() =>
      order.push(`timer@${clock.now()}`),
    );
    await clock.run(Promise.all([hashed, timer]), 20_000);
    expect(order).toEqual(["digest@0", "timer@1"]);
  });

  it("cancels a timer whose cancel function was called", async () => {
    const clock = new VirtualClock(0);
    let fired = false;
    const cancel = clock.setTimer(() => {
      fired = true;
    }, 500);
    cancel();
    await clock.run(sleep(clock, 1_000, new AbortController().signal), 5_000);
    expect(fired).toBe(false);
  });

  it("reports a run that waits for nothing instead of hanging", async () => {
    const clock = new VirtualClock(0);
    await expect(clock.run(new Promise(() => {}), 5_000)).rejects.toThrow(StuckRunError);
  });
});
