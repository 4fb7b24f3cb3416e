/** The words a failed connection is reported in (src/engine/retry.ts, `networkFailure`). */
import { describe, expect, it } from "vitest";
import { networkFailure } from "../../src/engine/retry.ts";

describe("networkFailure", () => {
  it("says what workerd's opaque messages mean, and keeps any other message without URL secrets", () => {
    expect(networkFailure(new Error("Network connection lost."))).toBe(
      "the connection failed (refused, reset or closed before an answer)",
    );
    expect(networkFailure(new Error("internal error; reference = abc123"))).toMatch(
      /^the host could not be reached/,
    );
    expect(networkFailure(new TypeError("fetch failed for https://u:p@x.example/a?key=1"))).toBe(
      "fetch failed for https://x.example/a",
    );
  });
});
