/**
 * Step records as the `run` row carries them (src/run/record-pack.ts): every record reads back
 * exactly as it was, whatever it holds, from less text; a record written whole by an earlier
 * release reads the same.
 */
import { describe, expect, it } from "vitest";
import { emptyMetrics, type StepRecord } from "../../src/engine/types.ts";
import { packRecord, unpackRecord } from "../../src/run/record-pack.ts";

const base = (id: string): StepRecord => ({
  id,
  status: "complete",
  output: { result: [{ id: "a-100", n: 1 }] },
  error: null,
  started_at: "2026-11-29T04:00:00.000Z",
  finished_at: "2026-11-29T04:00:00.001Z",
  metrics: { ...emptyMetrics(), attempts: 1 },
  tool_calls: [],
  annotations: null,
  steps: [],
});

const RECORDS: Array<[string, StepRecord]> = [
  ["s1", base("s1")],
  ["post/3", base("3")],
  ["child/call", { ...base("call"), output: null, status: "skipped", started_at: null, finished_at: null }],
  ["charge", { ...base("charge"), status: "failed", error: { code: "http_error", message: "HTTP 500" } }],
  [
    "answer",
    {
      ...base("answer"),
      metrics: {
        ...emptyMetrics(),
        tokens_in: 10,
        tokens_out: 4,
        cost_usd: 0.0001,
        llm_calls: 1,
        attempts: 2,
        tool_calls: 1,
      },
      tool_calls: [
        { name: "lookup", arguments: {}, result: { ok: true } } as unknown as StepRecord["tool_calls"][0],
      ],
      annotations: { confidence: 0.9 } as unknown as StepRecord["annotations"],
      variant: "premium",
      scores: [{ name: "cites", value: 1, reason: null, error: null, at: "2026-11-29T04:00:00.002Z" }],
    },
  ],
  ["fan", { ...base("fan"), steps: [base("0"), base("1")], reused_from: "r-earlier" }],
  ["renamed", { ...base("other-id") }],
];

describe("a step record in the run row", () => {
  it("reads back exactly as it was, from less text", () => {
    for (const [path, rec] of RECORDS) {
      const packed = packRecord(path, rec);
      expect(unpackRecord(path, JSON.parse(JSON.stringify(packed)))).toEqual(rec);
      expect(JSON.stringify(packed).length).toBeLessThan(JSON.stringify(rec).length);
    }
  });

  it("reads a record written whole (an earlier release's row) as it was", () => {
    for (const [path, rec] of RECORDS)
      expect(unpackRecord(path, JSON.parse(JSON.stringify(rec)))).toEqual(rec);
  });
});
