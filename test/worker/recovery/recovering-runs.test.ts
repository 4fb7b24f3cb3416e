/**
 * Recovering runs (docs/file-format.md): a step's `retry` policy replaces its kind's default attempts, and
 * `on_error: continue` records a failure while the run goes on, its dependents reading the error.
 */
import { describe, expect, it } from "vitest";
import { run, targetLog, uniqueKey } from "../harness.ts";

describe("retry", () => {
  it("retries a webhook up to its policy's max_attempts (5 here, where the default is 3)", async () => {
    const key = uniqueKey("retry5");
    const e = await run("recover-retry", {
      key,
      charge_route: "status/503,503,503,503,200",
      notify_route: "echo",
    });
    expect(e.status).toBe("complete");
    expect(e.steps[0].status).toBe("complete");
    expect(e.steps[0].metrics.attempts).toBe(5);
    // One idempotency key for every attempt.
    const charges = (await targetLog(key)).filter((r) => r.path.startsWith("/status/"));
    expect(charges).toHaveLength(5);
    expect(new Set(charges.map((r) => r.headers["idempotency-key"])).size).toBe(1);
  });

  it("gives up after max_attempts with webhook_failed", async () => {
    const key = uniqueKey("retry-out");
    const e = await run("recover-retry", { key, charge_route: "status/503", notify_route: "echo" });
    expect(e.status).toBe("failed");
    expect(e.error).toMatchObject({ code: "webhook_failed", step: "charge" });
    expect(e.steps[0].metrics.attempts).toBe(5);
  });
});

describe("on_error: continue", () => {
  it("records the failed step, hands its dependents {error}, and ends the run complete", async () => {
    const key = uniqueKey("continue");
    const e = await run("recover-retry", { key, charge_route: "echo", notify_route: "status/400" });
    expect(e.status).toBe("complete");
    expect(e.error).toBeNull();
    expect(e.steps[1].status).toBe("failed");
    expect(e.steps[1].error.code).toBe("webhook_failed");
    expect(e.output).toEqual({ result: { notified: false, code: "webhook_failed" } });
  });

  it("lets a step that succeeds pass its output as usual", async () => {
    const e = await run("recover-retry", {
      key: uniqueKey("ok"),
      charge_route: "echo",
      notify_route: "echo",
    });
    expect(e.status).toBe("complete");
    expect(e.output).toEqual({ result: { notified: true, code: null } });
  });
});
