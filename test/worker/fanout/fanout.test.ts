/**
 * Fan-out (`for_each`, docs/file-format.md) end to end: the Worker, the run's Durable Object with real
 * storage and alarms, the real webhook target and the OpenAI-shaped model stub. Order under
 * out-of-order completion, concurrency as the receiver sees it, max_failures 0 / N / -1, agents
 * under a budget, sub-workflows per item, eviction and the deadline in the middle of a fan-out,
 * the item limits, per-item records, events and storage.
 */

import { evictDurableObject, runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { runStub, startRun } from "../../reliability/run-helpers.ts";
import { poll } from "../../support/poll.ts";
import { call, type Envelope, run, TARGET, targetLog, uniqueKey, waitForRun } from "../harness.ts";
import { storedRows } from "../stored-rows.ts";

const vars = env as unknown as Record<string, string>;

interface Item {
  route: string;
}

/** The most fan-out items the engine's records show running at one moment ([started_at, finished_at)). */
function mostRunningAtOnce(items: Array<{ started_at: string; finished_at: string }>): number {
  const edges = items.flatMap((s) => [
    { at: Date.parse(s.started_at), d: 1 },
    { at: Date.parse(s.finished_at), d: -1 },
  ]);
  // At the same instant an item that ends makes room before one that starts.
  edges.sort((a, b) => a.at - b.at || a.d - b.d);
  let now = 0;
  let most = 0;
  for (const e of edges) {
    now += e.d;
    most = Math.max(most, now);
  }
  return most;
}

async function maxInFlight(key: string): Promise<number> {
  const res = await fetch(`${TARGET}/stats?key=${encodeURIComponent(key)}`);
  return ((await res.json()) as { max_in_flight: number }).max_in_flight;
}

/** The requests sent for the step or item at `path`, by the Idempotency-Key the runtime sends. */
function itemRequests(log: Awaited<ReturnType<typeof targetLog>>, runId: string, path: string) {
  return log.filter((r) => r.headers["idempotency-key"] === `${runId}:${path}`);
}

describe("webhook fan-out", () => {
  it("keeps results in input order when items finish out of order, one record per item", async () => {
    const key = uniqueKey("fan-order");
    const delays = [300, 20, 150, 10, 200];
    const items: Item[] = delays.map((ms) => ({ route: `hold/${ms}` }));
    const e = await run("fanout-webhooks", { key, items });
    expect(e.status).toBe("complete");
    const post = e.steps[0];
    expect(post.status).toBe("complete");
    expect(post.output.results.map((r: { body: { held: number } }) => r.body.held)).toEqual(delays);
    expect(post.steps.map((s: { id: string; status: string }) => [s.id, s.status])).toEqual(
      delays.map((_, i) => [String(i), "complete"]),
    );
    expect(post.steps[0].output).toEqual(post.output.results[0]);
    expect(post.steps[0].metrics.duration_ms).toBeGreaterThanOrEqual(300);
    // The step's metrics are its items' sums; the run counts each item once.
    expect(post.metrics.attempts).toBe(5);
    expect(e.steps[1].output).toEqual({ result: 5 });
    // The receiver saw the item and its index in each body, in completion order.
    const log = await targetLog(key);
    expect(log.map((r) => JSON.parse(r.body).index).sort()).toEqual([0, 1, 2, 3, 4]);
    const finishOrder = [...post.steps]
      .sort(
        (a: { finished_at: string }, b: { finished_at: string }) =>
          Date.parse(a.finished_at) - Date.parse(b.finished_at),
      )
      .map((s: { id: string }) => s.id);
    expect(finishOrder).not.toEqual(["0", "1", "2", "3", "4"]);
  });

  it("never has more requests in flight at the receiver than concurrency (3)", async () => {
    const key = uniqueKey("fan-conc");
    const items: Item[] = Array.from({ length: 10 }, (_, i) => ({ route: `hold/${80 + (i % 3) * 40}` }));
    const e = await run("fanout-webhooks", { key, items });
    expect(e.status).toBe("complete");
    // Never more at the receiver; and the engine did run 3 at once (its items' own records).
    expect(await maxInFlight(key)).toBeLessThanOrEqual(3);
    expect(mostRunningAtOnce(e.steps[0].steps)).toBe(3);
    expect(await targetLog(key)).toHaveLength(10);
  });

  it("without concurrency runs all items within the run's outbound limit of 6", async () => {
    const key = uniqueKey("fan-default");
    const items: Item[] = Array.from({ length: 12 }, () => ({ route: "hold/150" }));
    const e = await run("fanout-tolerant", { key, items });
    expect(e.status).toBe("complete");
    expect(await maxInFlight(key)).toBeLessThanOrEqual(6);
    expect(mostRunningAtOnce(e.steps[0].steps)).toBe(6);
  });

  it("sends each item its own Idempotency-Key <run_id>:<step>/<index> and webhook-id", async () => {
    const key = uniqueKey("fan-keys");
    const items: Item[] = [{ route: "echo" }, { route: "echo" }, { route: "echo" }];
    const e = await run("fanout-webhooks", { key, items });
    const log = await targetLog(key);
    const byIndex = new Map(log.map((r) => [Number(r.headers["x-item-index"]), r.headers]));
    for (const i of [0, 1, 2]) {
      expect(byIndex.get(i)?.["idempotency-key"]).toBe(`${e.run_id}:post/${i}`);
      expect(byIndex.get(i)?.["webhook-id"]).toBe(`msg_${e.run_id}_post_${i}`);
      expect(byIndex.get(i)?.["webhook-signature"]).toMatch(/^v1,/);
    }
    // The rendered body carries the item and its index (a number).
    expect(e.steps[0].output.results[2].body.body).toEqual({ item: { route: "echo" }, index: 2 });
  });

  it("with max_failures 0 fails at the first failure: in-flight items canceled, the rest never sent", async () => {
    const key = uniqueKey("fan-fail0");
    const items: Item[] = [
      { route: "hold/1500" },
      { route: "status/400" },
      { route: "hold/1500" },
      { route: "echo" },
      { route: "echo" },
    ];
    const e = await run("fanout-webhooks", { key, items });
    expect(e.status).toBe("failed");
    expect(e.error.code).toBe("fanout_failed");
    expect(e.error.step).toBe("post");
    expect(e.error.message).toMatch(
      /^1 of 5 items failed \(max_failures: 0, fail on the first\); first: item 1: webhook_failed: POST http:\/\/127\.0\.0\.1:\d+\/status\/400 answered 400/,
    );
    const post = e.steps[0];
    expect(post.status).toBe("failed");
    expect(post.steps.map((s: { status: string }) => s.status)).toEqual(["canceled", "failed", "canceled"]);
    expect(post.steps[1].error.code).toBe("webhook_failed");
    expect(e.steps[1].output).toEqual({ skipped: true, reason: "run_failed" });
    // Nothing past the first three was sent; item 1's failure was.
    const log = await targetLog(key);
    const sent = log.map((r) => r.headers["x-item-index"] as string);
    expect(sent).toContain("1");
    expect(sent.every((i) => ["0", "1", "2"].includes(i))).toBe(true);
    // The two held items were canceled, not answered: each ended before its 1.5 s hold could.
    for (const i of [0, 2]) {
      const arrived = log.find((r) => r.headers["x-item-index"] === String(i));
      if (arrived)
        expect(Date.parse(post.steps[i].finished_at), `item ${i}`).toBeLessThan(arrived.time + 1500);
    }
  });

  it("with max_failures 2 tolerates two failures and reports them in the results", async () => {
    const key = uniqueKey("fan-failN");
    const items: Item[] = [
      { route: "echo" },
      { route: "status/400" },
      { route: "echo" },
      { route: "status/404" },
    ];
    const e = await run("fanout-tolerant", { key, items });
    expect(e.status).toBe("complete");
    const results = e.steps[0].output.results;
    expect(results[0].status).toBe(200);
    expect(results[1]).toEqual({
      ktsu_error: expect.stringMatching(
        /^webhook_failed: POST http:\/\/127\.0\.0\.1:\d+\/status\/400 answered 400 after 1 attempt$/,
      ),
      item_index: 1,
    });
    expect(results[3]).toMatchObject({ item_index: 3, ktsu_error: expect.stringContaining("answered 404") });
    expect(e.steps[0].steps.map((s: { status: string }) => s.status)).toEqual([
      "complete",
      "failed",
      "complete",
      "failed",
    ]);
  });

  it("with max_failures 2 fails once a third item fails", async () => {
    const key = uniqueKey("fan-failN1");
    const items: Item[] = [
      { route: "status/400" },
      { route: "status/401" },
      { route: "status/403" },
      { route: "echo" },
    ];
    const e = await run("fanout-tolerant", { key, items });
    expect(e.status).toBe("failed");
    expect(e.error).toMatchObject({ code: "fanout_failed", step: "post" });
    expect(e.error.message).toMatch(
      /^3 of 4 items failed \(max_failures: 2\); first: item 0: webhook_failed: .*answered 400/,
    );
  });

  it("with max_failures -1 completes however many fail, and max_items keeps the first 5", async () => {
    const key = uniqueKey("fan-failall");
    const items: Item[] = Array.from({ length: 8 }, () => ({ route: "status/400" }));
    const e = await run("fanout-all", { key, items });
    expect(e.status).toBe("complete");
    expect(e.steps[0].output.results.map((r: { item_index: number }) => r.item_index)).toEqual([
      0, 1, 2, 3, 4,
    ]);
    expect(await targetLog(key)).toHaveLength(5);
  });

  it("completes an empty array with {results: []} and no items", async () => {
    const e = await run("fanout-webhooks", { key: uniqueKey("fan-empty"), items: [] });
    expect(e.status).toBe("complete");
    expect(e.steps[0]).toMatchObject({ status: "complete", output: { results: [] }, steps: [] });
  });

  it("fails with too_many_items over 1000 items without max_items, sending nothing", async () => {
    const key = uniqueKey("fan-toomany");
    const items: Item[] = Array.from({ length: 1001 }, () => ({ route: "echo" }));
    const e = await run("fanout-webhooks", { key, items });
    expect(e.status).toBe("failed");
    expect(e.error).toMatchObject({ code: "too_many_items", step: "post" });
    expect(e.error.message).toContain("1001 items");
    expect(await targetLog(key)).toHaveLength(0);
  });
});

describe("agent fan-out", () => {
  async function stubCalls(marker: string) {
    const res = await fetch(
      `${vars.MODEL_BASE_URL}/__log?key=${encodeURIComponent(vars.MODEL_API_KEY as string)}`,
    );
    const all = (await res.json()) as Array<{ body: { messages: Array<{ role: string; content: string }> } }>;
    return all.filter((c) => JSON.stringify(c.body).includes(marker));
  }

  it("makes one call per item whose prompt carries the item, and sums their cost", async () => {
    const marker = crypto.randomUUID();
    const topics = ["apples", "pears", "plums"].map((t) => `${t}-${marker}`);
    const e = await run("fanout-agents", { topics });
    expect(e.status).toBe("complete");
    const calls = await stubCalls(marker);
    expect(calls).toHaveLength(3);
    const prompts = calls.map((c) => c.body.messages.find((m) => m.role === "user")?.content).sort();
    expect(prompts).toEqual(topics.map((t, i) => `Item ${i} is ${t}`).sort());
    const ask = e.steps[0];
    expect(ask.steps.map((s: { metrics: { llm_calls: number } }) => s.metrics.llm_calls)).toEqual([1, 1, 1]);
    expect(ask.metrics).toMatchObject({ llm_calls: 3, tokens_in: 3000, tokens_out: 1500 });
    expect(ask.metrics.cost_usd).toBeCloseTo(0.006, 12);
    expect(e.totals.cost_usd).toBeCloseTo(0.006, 12);
    expect(e.totals.llm_calls).toBe(3);
  });

  it("never exceeds the budget: 20 items under a budget for 5 make at most 5 calls", async () => {
    const marker = crypto.randomUUID();
    const topics = Array.from({ length: 20 }, (_, i) => `t${i}-${marker}`);
    const e = await run("fanout-agents", { topics });
    const calls = await stubCalls(marker);
    expect(calls.length).toBeLessThanOrEqual(5);
    expect(calls.length).toBeGreaterThanOrEqual(4);
    expect(e.totals.cost_usd).toBeLessThanOrEqual(e.budget_usd);
    expect(e.totals.llm_calls).toBe(calls.length);
    // max_failures -1: the step completes; the items that did not fit failed with budget_exceeded.
    expect(e.status).toBe("complete");
    const results = e.steps[0].output.results as Array<{ text?: string; ktsu_error?: string }>;
    expect(results).toHaveLength(20);
    expect(results.filter((r) => r.text !== undefined)).toHaveLength(calls.length);
    for (const r of results.filter((x) => x.ktsu_error !== undefined))
      expect(r.ktsu_error).toMatch(/^budget_exceeded: /);
  });
});

describe("sub-workflow fan-out", () => {
  it("runs the child once per item; each item holds its child's step records", async () => {
    const key = uniqueKey("fan-sub");
    const e = await run("fanout-sub", { key, names: ["Ada", "Lin", "Sam"] });
    expect(e.status).toBe("complete");
    const each = e.steps[0];
    expect(
      each.output.results.map((r: { body: { body: { text: string; n: number } } }) => r.body.body),
    ).toEqual([
      { text: "Hello, Ada!", n: 0 },
      { text: "Hello, Lin!", n: 1 },
      { text: "Hello, Sam!", n: 2 },
    ]);
    expect(each.steps.map((s: { id: string }) => s.id)).toEqual(["0", "1", "2"]);
    expect(each.steps[1].steps.map((s: { id: string; status: string }) => [s.id, s.status])).toEqual([
      ["greet", "complete"],
      ["post", "complete"],
    ]);
    expect(each.steps[1].metrics.attempts).toBe(1);
    expect(each.metrics.attempts).toBe(3);
    const log = await targetLog(key);
    expect(log.map((r) => r.headers["idempotency-key"]).sort()).toEqual(
      [0, 1, 2].map((i) => `${e.run_id}:each/${i}/post`),
    );
  });
});

describe("durability", () => {
  it("after an eviction mid-fan-out, finished items are not sent again and the rest run with the same keys", async () => {
    const key = uniqueKey("fan-evict");
    const items: Item[] = Array.from({ length: 9 }, () => ({ route: "hold/400" }));
    const runId = await startRun("fanout-webhooks", { key, items });
    // Wait until some items have finished (persisted) while others are still to come.
    const before: Envelope = await poll(
      `three items of ${runId} complete`,
      async () => (await call(`/runs/${runId}`)).json() as Promise<Envelope>,
      (b) =>
        (b.steps[0].steps as Array<{ status: string }>).filter((s) => s.status === "complete").length >= 3,
    );
    const finished = (before.steps[0].steps as Array<{ id: string; status: string }>)
      .filter((s) => s.status === "complete")
      .map((s) => s.id);
    // The eviction strikes mid-fan-out: the run is still running, with items still to come.
    expect(before.status).toBe("running");
    expect(finished.length).toBeLessThan(9);
    await evictDurableObject(runStub(runId));
    expect(await runDurableObjectAlarm(runStub(runId))).toBe(true);
    const e = await waitForRun(runId);
    expect(e.status).toBe("complete");
    expect(e.steps[0].output.results).toHaveLength(9);
    const log = await targetLog(key);
    for (const id of finished) expect(itemRequests(log, runId, `post/${id}`), `item ${id}`).toHaveLength(1);
    for (let i = 0; i < 9; i++) {
      const n = itemRequests(log, runId, `post/${i}`).length;
      expect(n, `item ${i}`).toBeGreaterThanOrEqual(1);
      expect(n, `item ${i}`).toBeLessThanOrEqual(2);
    }
    // Every request of the run belongs to one of its items.
    expect(log.every((r) => /:post\/\d$/.test(r.headers["idempotency-key"] ?? ""))).toBe(true);
  });

  it("at the deadline cancels the items in flight and never starts the rest", async () => {
    const key = uniqueKey("fan-deadline");
    const items: Item[] = Array.from({ length: 4 }, () => ({ route: "hold/10000" }));
    const e = await run("fanout-deadline", { key, items });
    expect(e.status).toBe("failed");
    expect(e.error).toMatchObject({ code: "timeout", step: "post" });
    expect(e.steps[0].status).toBe("canceled");
    expect(e.steps[0].steps.map((s: { id: string; status: string }) => [s.id, s.status])).toEqual([
      ["0", "canceled"],
      ["1", "canceled"],
    ]);
    expect(e.steps[1].output).toEqual({ skipped: true, reason: "run_failed" });
    expect(await targetLog(key)).toHaveLength(2);
    // Ended by the deadline: at it, and each item long before its 10 s hold could answer.
    expect(Date.parse(e.finished_at)).toBeGreaterThanOrEqual(Date.parse(e.deadline));
    for (const item of e.steps[0].steps as Array<{ started_at: string; finished_at: string }>)
      expect(Date.parse(item.finished_at)).toBeLessThan(Date.parse(item.started_at) + 10_000);
  });

  it("stores the definition once, the run with its recomputable records, and one row per started item", async () => {
    const key = uniqueKey("fan-rows");
    const items: Item[] = Array.from({ length: 7 }, () => ({ route: "echo" }));
    const e = await run("fanout-webhooks", { key, items });
    const { keys, definition } = await storedRows(runStub(e.run_id));
    // Each item sent a webhook: its own row, its checkpoint (docs/operations.md). The fan-out step's record
    // and the transform ride in `run`; the definition is its own row or its version only.
    expect(keys).toEqual(["run", ...items.map((_, i) => `step/post/${i}`)].sort());
    expect(["row", "version"]).toContain(definition);
  });
});

describe("events", () => {
  it("streams started and finished events for every item, under the step's path", async () => {
    const key = uniqueKey("fan-events");
    const e = await run("fanout-webhooks", { key, items: [{ route: "echo" }, { route: "echo" }] });
    const res = await call(`/runs/${e.run_id}/events`);
    const text = await res.text();
    const events = text
      .split("\n\n")
      .filter((f) => f.includes("data: "))
      .map(
        (f) => JSON.parse(f.slice(f.indexOf("data: ") + 6)) as { type: string; step?: string; id?: string },
      );
    const of = (step: string) => events.filter((ev) => ev.step === step).map((ev) => ev.type);
    expect(of("post/0")).toEqual(["step.started", "step.completed"]);
    expect(of("post/1")).toEqual(["step.started", "step.completed"]);
    expect(events.find((ev) => ev.step === "post/1")?.id).toBe("1");
    expect(of("post")).toEqual(["step.started", "step.completed"]);
  });
});
