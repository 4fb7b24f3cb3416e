/**
 * W3C Trace Context as the run reads and writes it (src/engine/trace.ts; docs/operations.md,
 * "Traces"): an invoke's `traceparent` is taken only when valid, each step's span id follows
 * from its trace and path, and every outbound request carries its own span's `traceparent`.
 */
import { describe, expect, it } from "vitest";
import { parseTraceparent, type Span, stepSpanId, stepTracer } from "../../src/engine/trace.ts";

const TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";

describe("traceparent", () => {
  it("is taken from a valid version-00 header, with any flags", () => {
    expect(parseTraceparent(`00-${TRACE}-00f067aa0ba902b7-01`)).toEqual({
      traceId: TRACE,
      spanId: "00f067aa0ba902b7",
    });
    expect(parseTraceparent(` 00-${TRACE}-00f067aa0ba902b7-00 `)?.traceId).toBe(TRACE);
  });

  it("is ignored when malformed, upper-case, all zeros or of another version", () => {
    for (const bad of [
      null,
      "",
      "garbage",
      `00-${TRACE.toUpperCase()}-00f067aa0ba902b7-01`,
      `00-${"0".repeat(32)}-00f067aa0ba902b7-01`,
      `00-${TRACE}-${"0".repeat(16)}-01`,
      `ff-${TRACE}-00f067aa0ba902b7-01`,
      `00-${TRACE}-00f067aa0ba902b7`,
    ])
      expect(parseTraceparent(bad)).toBeNull();
  });
});

describe("span ids", () => {
  it("are the same for a step in every incarnation of its run, and differ between steps and traces", () => {
    const ids = ["", "a", "b", "a/0", "a/1", "a/0/child"].map((p) => stepSpanId(TRACE, p));
    expect(new Set(ids).size).toBe(ids.length);
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{16}$/);
    expect(stepSpanId(TRACE, "a/0")).toBe(stepSpanId(TRACE, "a/0"));
    expect(stepSpanId("0af7651916cd43dd8448eb211c80319c", "a")).not.toBe(stepSpanId(TRACE, "a"));
  });
});

describe("a step's client spans", () => {
  it("carry their own span id in the traceparent and end once, under the step's span", () => {
    const spans: Span[] = [];
    let t = 1000;
    const tracer = stepTracer(
      { id: TRACE, parent: null },
      stepSpanId(TRACE, "call"),
      () => t,
      (s) => spans.push(s),
    );
    const span = tracer.client("POST", { "http.request.method": "POST" });
    t = 1040;
    span.end({ "http.response.status_code": 503 }, "503");
    span.end({ "http.response.status_code": 200 });
    expect(spans).toHaveLength(1);
    expect(span.traceparent).toBe(`00-${TRACE}-${spans[0]?.spanId}-01`);
    expect(spans[0]).toMatchObject({
      parentSpanId: stepSpanId(TRACE, "call"),
      kind: 3,
      startMs: 1000,
      endMs: 1040,
      error: "503",
      attributes: { "http.request.method": "POST", "http.response.status_code": 503 },
    });
  });

  it("still give a traceparent when the run exports nothing, and keep nothing", () => {
    const span = stepTracer({ id: TRACE, parent: null }, stepSpanId(TRACE, "call"), () => 0, null).client(
      "POST",
      {},
    );
    expect(span.traceparent).toMatch(new RegExp(`^00-${TRACE}-[0-9a-f]{16}-01$`));
    span.end();
  });
});
