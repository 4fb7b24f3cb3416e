/**
 * What a webhook step's error says when the connection itself fails (docs/errors-and-limits.md,
 * `webhook_failed`): in words a user can act on, not workerd's "Network connection lost.".
 */
import { describe, expect, it } from "vitest";
import { run } from "../worker/harness.ts";

describe("a webhook step whose connection fails", () => {
  it("says the connection failed (refused, reset or closed before an answer)", async () => {
    // Port 1 on the loopback: nothing listens there, the connection is refused.
    const e = await run("webhook-anywhere", { url: "http://127.0.0.1:1/hook" });
    expect(e.status).toBe("failed");
    expect(e.error.code).toBe("webhook_failed");
    expect(e.error.message).toMatch(
      /^POST http:\/\/127\.0\.0\.1:1\/hook failed after \d+ attempts?: the connection failed \(refused, reset or closed before an answer\)$/,
    );
  });
});
