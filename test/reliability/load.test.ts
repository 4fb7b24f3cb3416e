/**
 * Load: 200 invokes at once through the Worker's fetch handler, each a run with a webhook round
 * trip. None may error or get lost: 200 distinct run ids, each readable and complete with its own
 * result.
 */
import { describe, expect, it } from "vitest";
import { call, type Envelope, invoke, targetLog, uniqueKey } from "../worker/harness.ts";

const RUNS = 200;

describe("200 concurrent invokes", () => {
  it("all complete, with distinct run ids, each readable with its own output", async () => {
    const key = uniqueKey("load");
    const responses = await Promise.all(
      Array.from({ length: RUNS }, (_, n) => invoke("rel-load", { n, key }, { wait: 60 })),
    );
    expect(responses.map((r) => r.status)).toEqual(Array(RUNS).fill(200));
    const envelopes = (await Promise.all(responses.map((r) => r.json()))) as Envelope[];
    const ids = new Set(envelopes.map((e) => e.run_id));
    expect(ids.size).toBe(RUNS);
    for (const [n, e] of envelopes.entries()) {
      expect(e.status).toBe("complete");
      expect(e.output).toEqual({ result: n });
    }
    const stored = await Promise.all(
      [...ids].map(async (id) => (await (await call(`/runs/${id}`)).json()) as Envelope),
    );
    expect(stored.filter((e) => e.status === "complete")).toHaveLength(RUNS);
    expect(await targetLog(key)).toHaveLength(RUNS);
  }, 120_000);
});
