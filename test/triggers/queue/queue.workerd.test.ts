/**
 * The queue trigger (docs/triggers.md, "Queues"): through miniflare's real queue broker (a
 * producer Worker beside ours sends; our `queue()` handler consumes in batches; retries; the
 * dead-letter queue), and through the runtime's own queue event for what a test must control
 * (a message id delivered twice, the ack or retry of each message).
 */

import { createExecutionContext, runInDurableObject, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import worker from "../../../src/index.ts";
import { poll } from "../../support/poll.ts";
import { call, targetLog, uniqueKey, waitForRun } from "../../worker/harness.ts";

const producer = (env as unknown as { QUEUE_PRODUCER: Fetcher }).QUEUE_PRODUCER;

/** Sends `bodies` to `queue` through the producer Worker's binding, in one `sendBatch`. */
async function send(queue: string, bodies: unknown[]): Promise<void> {
  const res = await producer.fetch(`https://producer/queues/${queue}/batch`, {
    method: "POST",
    body: JSON.stringify(bodies),
  });
  expect(res.status).toBe(202);
}

/**
 * Delivers `messages` to our Worker's `queue()` handler as one batch of `queue`, as the runtime
 * would; what the handler did with each (the test helper's `getQueueResult` drops a retry's
 * delay, which is what a rate-limited message is about, so the batch records calls itself).
 */
async function deliver(queue: string, messages: Array<{ id: string; body: unknown; attempts?: number }>) {
  const explicitAcks: string[] = [];
  const retryMessages: Array<{ msgId: string; delaySeconds?: number }> = [];
  let retryAll = false;
  const batch = {
    queue,
    messages: messages.map((m) => ({
      id: m.id,
      timestamp: new Date(),
      body: m.body,
      attempts: m.attempts ?? 1,
      ack: () => explicitAcks.push(m.id),
      retry: (o?: QueueRetryOptions) =>
        retryMessages.push(
          o?.delaySeconds === undefined ? { msgId: m.id } : { msgId: m.id, delaySeconds: o.delaySeconds },
        ),
    })),
    ackAll: () => {},
    retryAll: () => {
      retryAll = true;
    },
  } as unknown as MessageBatch<unknown>;
  const ctx = createExecutionContext();
  await (worker as Required<Pick<ExportedHandler<Env>, "queue">>).queue(batch, env as Env, ctx);
  await waitOnExecutionContext(ctx);
  return { explicitAcks, retryMessages, retryBatch: { retry: retryAll } };
}

/** The run a message of `queue` started (its object is named by workflow + idempotency key). */
function runOf(workflow: string, queue: string, messageId: string): string {
  return env.RUNS.idFromName(`${workflow}\nqueue:${queue}:${messageId}`).toString();
}

async function until<T>(what: string, probe: () => Promise<T | null>, timeoutMs = 15_000): Promise<T> {
  return (await poll(what, probe, (v) => v !== null, { timeoutMs, intervalMs: 50 })) as T;
}

afterEach(() => vi.restoreAllMocks());

describe("queue trigger through the local queue broker", () => {
  it("starts one run per message, batch after batch, with the body as params and the message as request", async () => {
    const key = uniqueKey("queue-batch");
    await send(
      "fixture-orders",
      Array.from({ length: 7 }, (_, i) => ({ key, order: i + 1 })),
    );
    const posts = await until("7 runs", async () => {
      const log = await targetLog(key);
      return log.length >= 7 ? log : null;
    });
    const seen = posts.map((p) => JSON.parse(p.body)).sort((a, b) => a.order - b.order);
    expect(seen.map((s) => s.order)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(new Set(seen.map((s) => s.message_id)).size).toBe(7);
    for (const s of seen) expect(s).toMatchObject({ queue: "fixture-orders", attempts: 1 });
    const run = await waitForRun(runOf("trig-queue", "fixture-orders", seen[0].message_id));
    expect(run.status).toBe("complete");
    expect(run.params).toEqual({ key, order: 1 });
    expect(run.request).toEqual({
      headers: {},
      queue: "fixture-orders",
      message_id: seen[0].message_id,
      attempts: 1,
    });
  });

  it("takes a message sent to the Worker's own /queues/{queue} when the producer is beside it (npm run start:queues)", async () => {
    const key = uniqueKey("queue-through-worker");
    const res = await call("/queues/fixture-orders", {
      method: "POST",
      body: JSON.stringify({ key, order: 1 }),
    });
    expect(res.status).toBe(202);
    expect(await res.json()).toEqual({ sent: 1 });
    const [post] = await until("the run's webhook", async () => {
      const log = await targetLog(key);
      return log.length >= 1 ? log : null;
    });
    expect(JSON.parse(post?.body ?? "{}")).toMatchObject({ queue: "fixture-orders", order: 1 });
  });

  it("answers a batch that is not a JSON array 400 with why, never an error", async () => {
    for (const body of ["{not json", '{"a": 1}', "[]"]) {
      const res = await call("/queues/fixture-orders/batch", { method: "POST", body });
      expect(res.status, body).toBe(400);
      expect(await res.text()).toMatch(/^a batch (is a JSON array|holds 1 to 100 messages)\n$/);
    }
  });

  it("retries a body that fails params.schema until it reaches the dead-letter queue, logging queue.rejected", async () => {
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    const key = uniqueKey("queue-dead");
    await send("fixture-orders", [{ key, order: 0 }]);
    const dead = await until("the dead letter", async () => {
      const res = await producer.fetch("https://producer/queues/fixture-orders-dead/received");
      const list = (await res.json()) as Array<{ id: string; body: { key: string } }>;
      return list.find((d) => d.body.key === key) ?? null;
    });
    const lines = errors.mock.calls
      .map((c) => String(c[0]))
      .filter((l) => l.includes('"queue.rejected"') && l.includes(dead.id))
      .map((l) => JSON.parse(l));
    // Delivered once and retried twice (max_retries = 2), refused each time.
    expect(lines.map((l) => l.attempts)).toEqual([1, 2, 3]);
    expect(lines[0]).toMatchObject({
      event: "queue.rejected",
      queue: "fixture-orders",
      message_id: dead.id,
      code: "invalid_params",
      errors: [{ path: "/order" }],
    });
    expect(await targetLog(key)).toEqual([]);
  });
});

describe("queue trigger: each message settled on its own", () => {
  it("acks the messages whose runs exist and retries the others, never the whole batch", async () => {
    vi.spyOn(console, "error").mockImplementation(() => {});
    const key = uniqueKey("queue-mixed");
    const good = `good-${key}`;
    const result = await deliver("fixture-orders", [
      { id: good, body: { key, order: 1 } },
      { id: `text-${key}`, body: "not json" },
      { id: `list-${key}`, body: [1, 2] },
      { id: `schema-${key}`, body: { key } },
    ]);
    expect(result.explicitAcks).toEqual([good]);
    expect(result.retryMessages.map((m) => m.msgId).sort()).toEqual(
      [`list-${key}`, `schema-${key}`, `text-${key}`].sort(),
    );
    expect(result.retryBatch.retry).toBe(false);
    expect((await waitForRun(runOf("trig-queue", "fixture-orders", good))).status).toBe("complete");
  });

  it("refuses a body nested deeper than 128 levels on its own, as a value or as text (found by test/props: a 20,000-deep body overflowed the stack and failed its whole batch)", async () => {
    vi.spyOn(console, "error").mockImplementation(() => {});
    const key = uniqueKey("queue-deep");
    let deep: unknown = 1;
    for (let i = 0; i < 20_000; i++) deep = { k: deep };
    // Written as text without JSON.stringify, which would overflow the stack itself.
    const deepText = `{"key":${JSON.stringify(key)},"order":3,"deep":${'{"k":'.repeat(20_000)}1${"}".repeat(20_000)}}`;
    const good = `good-${key}`;
    const result = await deliver("fixture-orders", [
      { id: good, body: { key, order: 1 } },
      { id: `value-${key}`, body: { key, order: 2, deep } },
      { id: `text-${key}`, body: deepText },
    ]);
    expect(result.explicitAcks).toEqual([good]);
    expect(result.retryMessages.map((m) => m.msgId).sort()).toEqual([`text-${key}`, `value-${key}`]);
    expect(result.retryBatch.retry).toBe(false);
  });

  it("takes JSON sent as text or bytes as params", async () => {
    const key = uniqueKey("queue-text");
    const text = JSON.stringify({ key, order: 3 });
    const r = await deliver("fixture-orders", [
      { id: `text-${key}`, body: text },
      { id: `bytes-${key}`, body: new TextEncoder().encode(JSON.stringify({ key, order: 4 })) },
    ]);
    expect(r.explicitAcks.sort()).toEqual([`bytes-${key}`, `text-${key}`]);
    expect((await waitForRun(runOf("trig-queue", "fixture-orders", `bytes-${key}`))).params).toEqual({
      key,
      order: 4,
    });
  });

  it("starts one run for a message delivered twice", async () => {
    const key = uniqueKey("queue-twice");
    const id = `twice-${key}`;
    const first = await deliver("fixture-orders", [{ id, body: { key, order: 2 } }]);
    const again = await deliver("fixture-orders", [{ id, body: { key, order: 2 }, attempts: 2 }]);
    expect(first.explicitAcks).toEqual([id]);
    expect(again.explicitAcks).toEqual([id]);
    const run = await waitForRun(runOf("trig-queue", "fixture-orders", id));
    expect(run.request.attempts).toBe(1);
    // One run, finished: its one webhook call is all that was sent.
    expect(run.steps.filter((s: { status: string }) => s.status === "complete")).toHaveLength(
      run.steps.length,
    );
    expect(await targetLog(key)).toHaveLength(1);
  });

  it("retries a rate-limited message after the limit's period", async () => {
    const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
    const key = uniqueKey("queue-limit");
    const messages = Array.from({ length: 4 }, (_, i) => ({
      id: `${key}-${i}`,
      body: { key, lane: String(i) },
    }));
    const acked: string[] = [];
    const retried: Array<{ msgId: string; delaySeconds?: number }> = [];
    // One at a time, so the limit (3 a minute per key) counts them in order.
    for (const m of messages) {
      const r = await deliver("fixture-limited", [m]);
      acked.push(...r.explicitAcks);
      retried.push(...r.retryMessages);
    }
    expect(acked).toEqual(messages.slice(0, 3).map((m) => m.id));
    expect(retried).toEqual([{ msgId: `${key}-3`, delaySeconds: 60 }]);
    expect(JSON.parse(String(warn.mock.calls[0]?.[0]))).toMatchObject({
      event: "queue.retried",
      queue: "fixture-limited",
      message_id: `${key}-3`,
      code: "rate_limited",
      delay_s: 60,
    });
  });

  it("reaches the run that exists when a message comes again after the run's object was killed", async () => {
    const key = uniqueKey("queue-kill");
    const id = `kill-${key}`;
    await deliver("fixture-orders", [{ id, body: { key, order: 5 } }]);
    const runId = runOf("trig-queue", "fixture-orders", id);
    expect((await waitForRun(runId)).status).toBe("complete");
    const stub = env.RUNS.get(env.RUNS.idFromString(runId));
    await runInDurableObject(stub, (_o, state) => state.abort("killed")).catch(() => {});
    const again = await deliver("fixture-orders", [{ id, body: { key, order: 5 }, attempts: 2 }]);
    expect(again.explicitAcks).toEqual([id]);
    const res = await call(`/runs/${runId}`);
    expect(((await res.json()) as { status: string }).status).toBe("complete");
    expect(await targetLog(key)).toHaveLength(1);
  });
});
