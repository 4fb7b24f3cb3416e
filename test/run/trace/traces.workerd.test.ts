/**
 * One trace per run (docs/operations.md, "Traces"): every run exports its spans to the local
 * OTLP collector the suite starts (test/servers/otlp-collector.ts) as OTLP/HTTP JSON; the trace id
 * is on the envelope, follows an invoke's `traceparent`, survives an eviction, and goes out on
 * every request the run makes; nothing secret is in a span; a collector that refuses costs the
 * run nothing, and its spans are tried again, then dropped and counted.
 */

import { evictDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, beforeEach, describe, expect, it, type MockInstance, vi } from "vitest";
import type { CollectedSpan } from "../../servers/otlp-types.ts";
import { poll } from "../../support/poll.ts";
import { call, type Envelope, invoke, run, targetLog, uniqueKey, waitForRun } from "../../worker/harness.ts";

const vars = env as unknown as Record<string, string>;
const COLLECTOR = vars.OTEL_EXPORTER_OTLP_ENDPOINT as string;
const SECRETS = ["WEBHOOK_SECRET", "OTEL_EXPORTER_OTLP_HEADERS"].map((k) => vars[k] as string);

interface Collected {
  spans: CollectedSpan[];
  refused: number;
  bodies: string[];
}

async function collected(traceId: string): Promise<Collected> {
  return (await fetch(`${COLLECTOR}/traces/${traceId}`)).json() as Promise<Collected>;
}

/** Polls the collector until it holds a span named `name` (the root span comes last). */
function traceWith(traceId: string, name: string, timeoutMs = 10_000): Promise<Collected> {
  return poll(
    `a span ${name} in trace ${traceId}`,
    () => collected(traceId),
    (c) => c.spans.some((s) => s.name === name),
    { timeoutMs, intervalMs: 30 },
  );
}

const attr = (s: CollectedSpan, key: string) => {
  const v = s.attributes.find((a) => a.key === key)?.value;
  if (!v) return undefined;
  return "stringValue" in v ? v.stringValue : "intValue" in v ? Number(v.intValue) : Object.values(v)[0];
};
const named = (c: Collected, name: string) => c.spans.filter((s) => s.name === name);
const one = (c: Collected, name: string) => {
  const found = named(c, name);
  expect(found, name).toHaveLength(1);
  return found[0] as CollectedSpan;
};

describe("one trace per run", () => {
  it("exports the run, its steps, a retried webhook's attempts, fan-out items and a sub-workflow's steps, nested", async () => {
    const key = uniqueKey("trace-tour");
    const e = await run("trace-tour", { key, items: [1, 2] });
    expect(e.status).toBe("complete");
    expect(e.trace_id).toMatch(/^[0-9a-f]{32}$/);
    const c = await traceWith(e.trace_id, "workflow trace-tour");

    const root = one(c, "workflow trace-tour");
    expect(root.kind).toBe(2); // SERVER
    expect(root.parentSpanId ?? "").toBe("");
    expect(attr(root, "workflow.name")).toBe("trace-tour");
    expect(attr(root, "workflow.run_id")).toBe(e.run_id);
    expect(root.resource).toMatchObject({ "service.name": "workflow-edge", "cloud.provider": "cloudflare" });
    expect(root.resource["service.version"]).toMatch(/^\d+\.\d+\.\d+/);
    expect(BigInt(root.startTimeUnixNano)).toBe(BigInt(Date.parse(e.created_at)) * 1_000_000n);
    expect(BigInt(root.endTimeUnixNano)).toBe(BigInt(Date.parse(e.finished_at)) * 1_000_000n);
    expect(c.spans.every((s) => s.traceId === e.trace_id)).toBe(true);

    // Each step once, under the root, kind INTERNAL, with its id, kind and status.
    for (const id of ["flaky", "each", "child", "secret"]) {
      const s = one(c, `step ${id}`);
      expect(s.parentSpanId).toBe(root.spanId);
      expect(s.kind).toBe(1);
      expect(attr(s, "workflow.step.id")).toBe(id);
      expect(attr(s, "workflow.step.status")).toBe("complete");
    }
    expect(attr(one(c, "step child"), "workflow.step.kind")).toBe("workflow");

    // The webhook answered 503, then 200: two client spans, the second a resend.
    const flaky = one(c, "step flaky");
    const attempts = c.spans
      .filter((s) => s.parentSpanId === flaky.spanId)
      .sort((a, b) => (a.startTimeUnixNano < b.startTimeUnixNano ? -1 : 1));
    expect(
      attempts.map((s) => [
        s.name,
        s.kind,
        attr(s, "http.response.status_code"),
        attr(s, "http.request.resend_count"),
      ]),
    ).toEqual([
      ["POST", 3, 503, undefined],
      ["POST", 3, 200, 1],
    ]);
    expect(attr(attempts[0] as CollectedSpan, "url.full")).toMatch(
      /^http:\/\/127\.0\.0\.1:\d+\/status\/503,200$/,
    );
    expect(attr(attempts[0] as CollectedSpan, "server.address")).toBe("127.0.0.1");
    expect(attempts[0]?.status?.code).toBe(2);

    // Each request carried its own span in its traceparent.
    const sent = (await targetLog(key)).filter((r) => r.path.startsWith("/status"));
    expect(sent.map((r) => r.headers.traceparent)).toEqual(
      attempts.map((s) => `00-${e.trace_id}-${s.spanId}-01`),
    );

    // Fan-out items under their step; the sub-workflow's steps under the workflow step.
    const each = one(c, "step each");
    for (const i of [0, 1]) expect(one(c, `step each[${i}]`).parentSpanId).toBe(each.spanId);
    const child = one(c, "step child");
    expect(one(c, "step shape").parentSpanId).toBe(child.spanId);
    const post = one(c, "step post");
    expect(post.parentSpanId).toBe(child.spanId);
    expect(c.spans.filter((s) => s.parentSpanId === post.spanId).map((s) => s.name)).toEqual(["POST"]);
  });

  it("exports each compensation as a span under the root, its attempts as client spans under it", async () => {
    const key = uniqueKey("trace-comp");
    const res = await invoke("comp-saga", { key, undo: "status/500,200" }, { wait: 20 });
    const e = (await res.json()) as Envelope;
    expect(e.status).toBe("failed");
    const c = await traceWith(e.trace_id, "compensate reserve", 15_000);
    const root = one(c, "workflow comp-saga");
    const reserve = one(c, "compensate reserve");
    expect(reserve.parentSpanId).toBe(root.spanId);
    expect(attr(reserve, "workflow.compensation.status")).toBe("complete");
    expect(attr(reserve, "workflow.compensation.attempts")).toBe(2);
    // Its two attempts (500, then 200) are client spans under it.
    const attempts = c.spans.filter((s) => s.parentSpanId === reserve.spanId);
    expect(attempts).toHaveLength(2);
    for (const name of ["compensate charge", "compensate label/0", "compensate label/1"])
      expect(one(c, name).parentSpanId).toBe(root.spanId);
  });

  it("puts the run in the caller's trace from a valid traceparent, and starts a new one for an invalid header", async () => {
    const traceId = crypto.randomUUID().replaceAll("-", "");
    const parent = "00f067aa0ba902b7";
    const key = uniqueKey("trace-parent");
    const e = await run("trace-tour", { key }, { headers: { traceparent: `00-${traceId}-${parent}-01` } });
    expect(e.trace_id).toBe(traceId);
    const c = await traceWith(traceId, "workflow trace-tour");
    expect(one(c, "workflow trace-tour").parentSpanId).toBe(parent);

    for (const bad of ["00-zz-00f067aa0ba902b7-01", `00-${"0".repeat(32)}-${parent}-01`, "garbage"]) {
      const res = await invoke(
        "trace-tour",
        { key: uniqueKey("trace-bad") },
        { wait: 30, headers: { traceparent: bad } },
      );
      expect(res.status).toBe(200);
      const other = (await res.json()) as Envelope;
      expect(other.trace_id).toMatch(/^[0-9a-f]{32}$/);
      expect(other.trace_id).not.toBe(traceId);
    }
  });

  it("keeps one trace across an eviction while the run waits: each step once, the wait with its signal", async () => {
    const key = uniqueKey("trace-wait");
    const res = await invoke("wait-signal", { key });
    const { run_id } = (await res.json()) as { run_id: string };
    await poll(
      `${run_id}'s payment step waiting`,
      async () => (await (await call(`/runs/${run_id}`)).json()) as Envelope,
      (e) => e.steps.find((s: { id: string }) => s.id === "payment")?.status === "waiting",
    );
    await evictDurableObject(env.RUNS.get(env.RUNS.idFromString(run_id)));
    await call(`/runs/${run_id}/signals/payment_received`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ amount: 3 }),
    });
    const e = await waitForRun(run_id);
    expect(e.error).toBeNull();
    const c = await traceWith(e.trace_id, "workflow wait-signal");
    for (const id of ["before", "payment", "record"]) one(c, `step ${id}`);
    const wait = one(c, "step payment");
    expect(wait.events?.map((x) => x.name)).toEqual(["signal.received"]);
    expect(Number(BigInt(wait.endTimeUnixNano) - BigInt(wait.startTimeUnixNano))).toBeGreaterThan(0);
    // The request after the eviction carries the same trace.
    const record = (await targetLog(key)).find((r) => r.path === "/echo");
    expect(record?.headers.traceparent).toMatch(new RegExp(`^00-${e.trace_id}-[0-9a-f]{16}-01$`));
  });

  it("exports no secret: not in a URL, an attribute or anywhere in a request the collector took", async () => {
    const key = uniqueKey("trace-secret");
    const e = await run("trace-tour", { key });
    const c = await traceWith(e.trace_id, "workflow trace-tour");
    const secretCall = c.spans.find((s) => s.parentSpanId === one(c, "step secret").spanId) as CollectedSpan;
    // A url built from a secret shows its origin only (docs/file-format.md, "Env and secrets").
    expect(attr(secretCall, "url.full")).toBe(`${new URL(vars.TARGET_URL as string).origin}/…`);
    for (const body of c.bodies) for (const secret of SECRETS) expect(body).not.toContain(secret);
    // The query is never exported, masked or not.
    expect(c.bodies.join("")).not.toContain("token=");
  });
});

describe("a collector that refuses", () => {
  let log: MockInstance;
  beforeEach(() => {
    log = vi.spyOn(console, "log");
  });
  afterEach(() => log.mockRestore());

  const lines = (event: string) =>
    log.mock.calls
      .map((c) => String(c[0]))
      .filter((l) => l.startsWith(`{"event":"${event}"`))
      .map((l) => JSON.parse(l) as Record<string, unknown>);

  it("never fails or slows the run; its spans are tried again from the alarm, and reach the collector once it takes them", async () => {
    const traceId = crypto.randomUUID().replaceAll("-", "");
    await fetch(`${COLLECTOR}/fail/${traceId}?times=2`, { method: "POST" });
    const e = await run(
      "trace-tour",
      { key: uniqueKey("trace-retry") },
      { headers: { traceparent: `00-${traceId}-00f067aa0ba902b7-01` } },
    );
    expect(e.status).toBe("complete");
    const c = await traceWith(traceId, "workflow trace-tour");
    expect(c.refused).toBe(2);
    expect(named(c, "step flaky")).toHaveLength(1);
    const finished = lines("run.finished").find((l) => l.run_id === e.run_id);
    expect(finished).toMatchObject({ trace_id: traceId, spans_dropped: 0 });
  });

  it("drops a batch after 3 retries and counts it in a trace.dropped line, leaving the run's storage as it was", async () => {
    const traceId = crypto.randomUUID().replaceAll("-", "");
    await fetch(`${COLLECTOR}/fail/${traceId}?times=100`, { method: "POST" });
    const e = await run(
      "trace-tour",
      { key: uniqueKey("trace-drop") },
      { headers: { traceparent: `00-${traceId}-00f067aa0ba902b7-01` } },
    );
    expect(e.status).toBe("complete");
    const dropped = await poll(
      `a trace.dropped line for ${e.run_id}`,
      () => lines("trace.dropped").find((l) => l.run_id === e.run_id),
      (l) => l !== undefined,
    );
    expect(dropped).toMatchObject({ trace_id: traceId });
    expect(dropped?.spans_dropped).toBeGreaterThan(5);
    expect((await collected(traceId)).refused).toBe(4);
    // The run is as it was, and its trace row is gone.
    const stub = env.RUNS.get(env.RUNS.idFromString(e.run_id));
    const { runInDurableObject } = await import("cloudflare:test");
    const keys = await runInDurableObject(stub, (_o, state) =>
      [...state.storage.kv.list<string>()].map(([k]) => k),
    );
    expect(keys).not.toContain("trace");
    expect(((await (await call(`/runs/${e.run_id}`)).json()) as Envelope).status).toBe("complete");
  });
});
