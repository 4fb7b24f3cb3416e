/**
 * docs/file-format.md "Substitution" against the real webhook target: a value inserted after
 * the first `?` of a webhook URL is percent-encoded, also when that `?` came from an inserted
 * base URL (so a caller's value cannot add query parameters).
 */
import { describe, expect, it } from "vitest";
import { run, TARGET, targetLog, uniqueKey } from "../worker/harness.ts";

describe("webhook url with a base that has a query", () => {
  it("sends the appended value percent-encoded, as one query parameter", async () => {
    const key = uniqueKey("a8url");
    const e = await run("url-query", { base: `${TARGET}/echo?key=${key}`, thread: "t1&admin=true" });
    expect(e.status).toBe("complete");
    expect(await targetLog(key)).toHaveLength(1);
    // The target echoes the query it parsed from the request line.
    expect(e.steps[0].output.body.query).toEqual({ key, thread: "t1&admin=true" });
  });
});
