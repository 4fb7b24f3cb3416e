/**
 * docs/file-format.md "Expressions" for ktsu files: a bare hyphenated name (`params.user-id`,
 * `sort: {field: created-at}`) is one field, as ktsu reads it, never a JMESPath subtraction that
 * fails the run with expression_error. Arithmetic written with spaces still works.
 */
import { describe, expect, it } from "vitest";
import { run } from "../harness.ts";

const items = [
  { "created-at": 1, "user-id": "a", "is-active": true },
  { "created-at": 3, "user-id": "b", "is-active": true },
  { "created-at": 2, "user-id": "a", "is-active": false },
  { "created-at": 5, "user-id": "c", "is-active": false },
];

describe("hyphenated field names", () => {
  it("reads them in params, conditions, sort, deduplicate, filter and map", async () => {
    const e = await run("hyphen-names", { "is-vip": true, "user-id": "u-1", items });
    expect(e.error).toBeNull();
    expect(e.status).toBe("complete");
    // desc by created-at: 5c 3b 2a 1a; first per user-id: 5c 3b 2a; active: 3b.
    expect(e.output).toEqual({ result: { who: "u-1", ranked: [{ id: "b", at: 3 }], spread: 3 } });
  });

  it("skips on a false hyphenated condition", async () => {
    const e = await run("hyphen-names", { "is-vip": false, "user-id": "u-2", items });
    expect(e.steps[0].output).toEqual({ skipped: true, reason: "condition_false" });
    expect(e.output.result.who).toBe("u-2");
  });
});
