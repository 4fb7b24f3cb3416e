/**
 * What a run's trace costs and how its export is kept (src/run/trace/run-trace.ts through the
 * lifecycle; docs/operations.md, "Traces"): without an endpoint nothing is collected, asked or
 * written; with one, the spans go after the answer, a batch the collector refused waits in the
 * run's `trace` row for the alarm, 3 retries, then it is dropped and counted.
 */
import { describe, expect, it } from "vitest";
import { EXPORT_RETRIES, EXPORT_RETRY_MS } from "../../../src/run/trace/run-trace.ts";
import { manualClock, setup, start } from "../lifecycle/lifecycle-harness.ts";

const ON = { OTEL_EXPORTER_OTLP_ENDPOINT: "https://collector.example.com" };
const done = () => Promise.resolve({ status: 200, headers: {}, body: null });

describe("a run's trace", () => {
  it("costs nothing without an endpoint: no span is kept, no export is asked, no row is written", async () => {
    const { run, puts, rec } = setup(done);
    run.start(start(true));
    await run.ended();
    expect(rec.effects).not.toContain("export");
    expect(puts).not.toContain("trace");
    expect(run.spansToExport()).toBeNull();
    expect(run.envelope().trace_id).toMatch(/^[0-9a-f]{32}$/);
  });

  it("with an endpoint, asks for one export after the run, of its root and step spans, and writes nothing more when it is taken", async () => {
    const off = setup(done);
    off.run.start(start(true));
    await off.run.ended();
    const { run, puts, rec } = setup(done, undefined, ON);
    run.start(start(true));
    await run.ended();
    expect(rec.effects.filter((e) => e === "export")).toEqual(["export"]);
    const batch = run.spansToExport() ?? [];
    expect(batch.map((s) => s.name).sort()).toEqual(["step call", "step shape", "workflow plan"]);
    const root = batch.find((s) => s.name === "workflow plan");
    expect(batch.filter((s) => s !== root).every((s) => s.parentSpanId === root?.spanId)).toBe(true);
    expect(run.exported(true)).toEqual({ dropped: 0, ended: true });
    expect(puts).toEqual(off.puts);
    expect(run.spansToExport()).toBeNull();
  });

  it("keeps a refused batch in its row, tries it again from the alarm with a doubling delay, then drops and counts it", async () => {
    const clock = manualClock(Date.parse("2026-11-25T12:00:00Z"));
    const { run, puts, rec, kv } = setup(done, clock, ON);
    run.start(start(true));
    await run.ended();
    run.reported({ type: "list", key: "complete", ok: true, durableAt: null });
    const batch = run.spansToExport() ?? [];
    expect(run.exported(false)).toEqual({ dropped: 0, ended: true });
    expect(puts).toContain("trace");
    // The alarm comes at the retry (sooner than the end guard), and each retry doubles the delay.
    for (let i = 0; i < EXPORT_RETRIES; i++) {
      const at = clock.t + EXPORT_RETRY_MS * 2 ** i;
      expect(rec.wakes.at(-1)).toEqual({ at, durable: true });
      clock.t = at - 1;
      expect(run.spansToExport()).toBeNull();
      clock.t = at;
      rec.effects.length = 0;
      run.alarm(clock.t);
      expect(rec.effects).toContain("export");
      expect(run.spansToExport()).toEqual(batch);
      const last = i === EXPORT_RETRIES - 1;
      expect(run.exported(false)).toEqual({ dropped: last ? batch.length : 0, ended: true });
    }
    expect(run.trace.dropped).toBe(batch.length);
    // Nothing waits: the row goes (the run's log line has been written; a trace.dropped line says it).
    expect(kv.get("trace")).toBeUndefined();
    expect(run.spansToExport()).toBeNull();
  });

  it("puts a re-run in a new trace, and a run in its caller's trace when it was given one", async () => {
    const a = setup(done);
    a.run.start({
      ...start(true),
      trace: { id: "4bf92f3577b34da6a3ce929d0e0e4736", parent: "00f067aa0ba902b7" },
    });
    expect(a.run.envelope().trace_id).toBe("4bf92f3577b34da6a3ce929d0e0e4736");
    const b = setup(done);
    b.run.start(start(true));
    expect(b.run.envelope().trace_id).not.toBe(a.run.envelope().trace_id);
  });
});
