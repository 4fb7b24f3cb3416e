/** GET /runs/{id}/events: Server-Sent Events that replay, follow, and close when the run ends. */
import { describe, expect, it } from "vitest";
import { readAllEvents, type Sse } from "../../support/sse.ts";
import { call, invoke, run } from "../../worker/harness.ts";

describe("run events", () => {
  it("streams a running run's events in order and closes at the end", async () => {
    const res = await invoke("parallel-webhooks");
    const { run_id } = (await res.json()) as { run_id: string };
    const events = await readAllEvents(await call(`/runs/${run_id}/events`));
    const seen = events.map((e) => `${e.event} ${e.data.step ?? ""}`.trim());
    expect(seen.slice(0, 2).sort()).toEqual(["step.started left", "step.started right"]);
    expect(seen.slice(2, 4).sort()).toEqual(["step.completed left", "step.completed right"]);
    expect(seen.slice(4)).toEqual(["step.started joined", "step.completed joined", "run.completed"]);
    expect(events.map((e) => Number(e.id))).toEqual(events.map((_, i) => i + 1));
    expect(events.at(-1)?.data).toMatchObject({ run_id, status: "complete", output: { result: [200, 200] } });
  });

  it("replays exactly the events that were sent live", async () => {
    const res = await invoke("fail-fast");
    const { run_id } = (await res.json()) as { run_id: string };
    const live = await readAllEvents(await call(`/runs/${run_id}/events`));
    const replay = await readAllEvents(await call(`/runs/${run_id}/events`));
    const key = (e: Sse) => `${e.event} ${String(e.data.step ?? "")}`;
    // Same events with the same data; only the order of events at the same instant may differ.
    expect([...replay].sort((a, b) => key(a).localeCompare(key(b)))).toEqual(
      [...live].sort((a, b) => key(a).localeCompare(key(b))).map((e) => ({ ...e, id: expect.any(String) })),
    );
    const started = replay.filter((e) => e.event === "step.started");
    for (const e of started) expect(e.data).toMatchObject({ output: null, error: null, finished_at: null });
  });

  it("replays a finished run's history, with skips, and closes", async () => {
    const e = await run("basic", { items: [{ name: "a", price: 1 }] });
    const events = await readAllEvents(await call(`/runs/${e.run_id}/events`));
    const seen = events.map((ev) => `${ev.event} ${ev.data.step ?? ""}`.trim());
    expect(seen).toContain("step.skipped vip-only");
    expect(seen.at(-1)).toBe("run.completed");
    expect(seen.filter((s) => s.startsWith("step.completed"))).toHaveLength(3);
  });

  it("reports failure, cancellation and skips caused by it", async () => {
    const e = await run("fail-fast");
    const events = await readAllEvents(await call(`/runs/${e.run_id}/events`));
    const seen = events.map((ev) => `${ev.event} ${ev.data.step ?? ""}`.trim());
    expect(seen).toEqual(
      expect.arrayContaining(["step.failed bad", "step.canceled slow", "step.skipped never"]),
    );
    expect(events.at(-1)?.data).toMatchObject({ status: "failed", error: { code: "webhook_failed" } });
  });
});
