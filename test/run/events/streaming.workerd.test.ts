/**
 * Answers as they are written (docs/http-api.md, "Streaming"): an invoke with
 * `Accept: text/event-stream` is answered at once with the run's events, `run.started` first,
 * a streaming agent step's `output.delta`s as the model generates them, `run.completed` (the
 * envelope) last; live listeners get the deltas too, a reconnect with `Last-Event-ID` what it
 * missed; nothing of the deltas is stored.
 */

import { describe, expect, it } from "vitest";
import { runStub } from "../../reliability/run-helpers.ts";
import { readUntil } from "../../support/read-stream.ts";
import { call, type Envelope, waitForRun } from "../../worker/harness.ts";
import { storedRows } from "../../worker/stored-rows.ts";

interface Ev {
  id: number;
  type: string;
  data: Record<string, unknown>;
}

function parse(text: string): Ev[] {
  return text
    .split("\n\n")
    .filter((b) => b.trim() !== "")
    .map((b) => {
      const id = Number(/^id: (\d+)$/m.exec(b)?.[1]);
      const type = /^event: (.+)$/m.exec(b)?.[1] ?? "";
      const data = JSON.parse(/^data: (.*)$/m.exec(b)?.[1] ?? "{}") as Record<string, unknown>;
      return { id, type, data };
    });
}

function invokeStream(name: string, body: unknown): Promise<Response> {
  return call(`/invoke/${name}`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "text/event-stream" },
    body: JSON.stringify(body),
  });
}

const PROMPT = "The quick brown fox jumps over the lazy dog, twice: the quick brown fox.";

describe("an invoke that asks for text/event-stream", () => {
  it("answers 200 with the run's events: run.started, the steps, the answer's deltas, run.completed with the envelope", async () => {
    const res = await invokeStream("stream-agent", { prompt: PROMPT });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/event-stream/);
    const events = parse(await res.text());
    expect(events[0]?.type).toBe("run.started");
    expect(events[0]?.data).toMatchObject({ workflow: "stream-agent" });
    const runId = events[0]?.data.run_id as string;
    expect(res.headers.get("location")).toBe(`/runs/${runId}`);
    expect(events.map((e) => e.id)).toEqual(events.map((_, i) => i + 1));
    const deltas = events.filter((e) => e.type === "output.delta");
    expect(deltas.length).toBeGreaterThan(5);
    for (const d of deltas) expect(d.data.step).toBe("answer");
    expect(deltas.map((d) => d.data.text).join("")).toBe(PROMPT);
    // The deltas come while the step runs: after it started, before it completed.
    const types = events.map((e) => e.type);
    const started = types.findIndex((t, i) => t === "step.started" && events[i]?.data.step === "answer");
    const completed = types.findIndex((t, i) => t === "step.completed" && events[i]?.data.step === "answer");
    expect(started).toBeLessThan(types.indexOf("output.delta"));
    expect(types.lastIndexOf("output.delta")).toBeLessThan(completed);
    const last = events[events.length - 1] as Ev;
    expect(last.type).toBe("run.completed");
    expect(last.data).toMatchObject({ run_id: runId, status: "complete" });
    expect(last.data.steps).toHaveLength(2);
    expect((await (await call(`/runs/${runId}`)).json()) as Envelope).toMatchObject({ status: "complete" });
  });

  it("refuses before a run exists with the usual problem+json, not a stream", async () => {
    const res = await invokeStream("stream-agent", { nope: 1 });
    expect(res.status).toBe(422);
    expect(res.headers.get("content-type")).toBe("application/problem+json");
  });

  it("streams Anthropic's Messages stream, and a model whose stream breaks is reset and replaced by the next", async () => {
    const res = await invokeStream("stream-variants", { prompt: PROMPT });
    const events = parse(await res.text());
    const of = (step: string) => events.filter((e) => e.data.step === step && e.type.startsWith("output."));
    expect(
      of("claude")
        .map((e) => e.data.text)
        .join(""),
    ).toBe(PROMPT);
    const fallback = of("fallback");
    // The broken model's two chunks (8 characters), its reset, then the whole answer of the next model.
    const reset = fallback.findIndex((e) => e.type === "output.reset");
    expect(
      (
        fallback
          .slice(0, reset)
          .map((e) => e.data.text)
          .join("") as string
      ).length,
    ).toBe(8);
    expect(fallback.filter((e) => e.type === "output.reset")).toHaveLength(1);
    expect(
      fallback
        .slice(reset + 1)
        .map((e) => e.data.text)
        .join(""),
    ).toBe(PROMPT);
    expect(events[events.length - 1]?.data.status).toBe("complete");
  });

  it("goes on when the caller leaves mid-stream: the run completes", async () => {
    const res = await invokeStream("stream-agent", { prompt: `${PROMPT} CHUNK_MS=40` });
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    const runId = parse(first)[0]?.data.run_id as string;
    await reader.cancel();
    const e = await waitForRun(runId);
    expect(e.status).toBe("complete");
    expect(JSON.stringify(e.steps[1].output)).toContain(`${PROMPT} CHUNK_MS=40`);
  });
});

describe("a streamed invoke that waits its turn", () => {
  it("opens with run.queued, and carries the run once it starts, to run.completed", async () => {
    const group = `stream-q-${crypto.randomUUID()}`;
    const first = await call("/invoke/conc-keyed", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ group, hold_ms: 600 }),
    });
    expect(first.status).toBe(202);
    const res = await invokeStream("conc-keyed", { group, hold_ms: 10 });
    expect(res.status).toBe(200);
    const events = parse(await res.text());
    expect(events[0]?.type).toBe("run.queued");
    const types = events.map((e) => e.type);
    expect(types).toContain("step.started");
    expect(types[types.length - 1]).toBe("run.completed");
    expect(events[events.length - 1]?.data.status).toBe("complete");
  });
});

describe("a repair of a streamed answer", () => {
  it("streams the repair after output.reset", async () => {
    const res = await invokeStream("stream-repair", { text: "anything" });
    const events = parse(await res.text());
    const out = events.filter((e) => e.type.startsWith("output."));
    const reset = out.findIndex((e) => e.type === "output.reset");
    expect(reset).toBeGreaterThan(0);
    // The first (invalid) reply, then the repaired one, whole, after the reset.
    const repaired = out
      .slice(reset + 1)
      .map((e) => e.data.text)
      .join("");
    expect(JSON.parse(repaired)).toBeTypeOf("object");
    expect(events[events.length - 1]?.data.status).toBe("complete");
  });
});

describe("a stream the deadline cuts off", () => {
  it("stops mid-way: the step fails with timeout, the stream ends with the failed run", async () => {
    const prompt = `${"A long answer that the deadline will cut. ".repeat(6)}CHUNK_MS=60`;
    const res = await invokeStream("stream-deadline", { prompt });
    const events = parse(await res.text());
    const text = events
      .filter((e) => e.type === "output.delta")
      .map((e) => e.data.text)
      .join("");
    expect(text.length).toBeGreaterThan(0);
    expect(text.length).toBeLessThan(prompt.length);
    const last = events[events.length - 1] as Ev;
    expect(last.type).toBe("run.completed");
    expect(last.data).toMatchObject({ status: "failed", error: { code: "timeout", step: "answer" } });
  });
});

describe("live listeners of a streaming run", () => {
  it("get the deltas on GET /runs/{id}/events, and a reconnect with Last-Event-ID gets the ones it missed", async () => {
    const res = await invokeStream("stream-agent", { prompt: `${PROMPT} CHUNK_MS=30` });
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    const runId = parse(new TextDecoder().decode((await reader.read()).value))[0]?.data.run_id as string;
    // A listener reads a few events, leaves, and comes back with the id of the last it had.
    const first = await call(`/runs/${runId}/events`);
    const r1 = (first.body as ReadableStream<Uint8Array>).getReader();
    // Until one whole output.delta event has come.
    const read = await readUntil(
      r1,
      (t) => {
        const at = t.indexOf("event: output.delta");
        return at >= 0 && t.indexOf("\n\n", at) >= 0;
      },
      { what: "the live events, for a delta" },
    );
    // The events read in whole (a last one may have been cut by the chunking).
    const seen = parse(read.slice(0, read.lastIndexOf("\n\n") + 2));
    await r1.cancel();
    const lastId = (seen[seen.length - 1] as Ev).id;
    const again = await call(`/runs/${runId}/events`, { headers: { "last-event-id": String(lastId) } });
    const rest = parse(await again.text());
    expect(rest[0]?.id).toBe(lastId + 1);
    const text = [...seen, ...rest]
      .filter((e) => e.type === "output.delta")
      .map((e) => e.data.text)
      .join("");
    expect(text).toBe(`${PROMPT} CHUNK_MS=30`);
    await reader.cancel();
  });

  it("writes the same rows as the same run without streaming", async () => {
    const keysOf = async (name: string) => {
      const res = await call(`/invoke/${name}`, {
        method: "POST",
        headers: { "content-type": "application/json", prefer: "wait=20" },
        body: JSON.stringify({ prompt: PROMPT }),
      });
      const e = (await res.json()) as Envelope;
      expect(e.status).toBe("complete");
      return (await storedRows(runStub(e.run_id))).keys;
    };
    expect(await keysOf("stream-agent")).toEqual(await keysOf("stream-agent-plain"));
  });
});
