/**
 * Fan-out (docs/file-format.md) end to end: what test/worker/fanout.test.ts does
 * not cover. Sub-workflow items that fail, a fan-out inside a sub-workflow (error.step, keys),
 * cancel in the middle of a fan-out, retries per item, the condition, `from` not an array,
 * substitution of item / item_index, output.schema over {results}, events of failed items.
 */
import { describe, expect, it } from "vitest";
import { logUntil, startRun } from "../../reliability/run-helpers.ts";
import { call, type Envelope, run, targetLog, uniqueKey, waitForRun } from "../harness.ts";

function events(text: string) {
  return text
    .split("\n\n")
    .filter((f) => f.includes("data: "))
    .map(
      (f) =>
        JSON.parse(f.slice(f.indexOf("data: ") + 6)) as {
          type: string;
          step?: string;
          id?: string;
          error?: { code: string } | null;
        },
    );
}

describe("sub-workflow fan-out whose children fail", () => {
  it("fails with fanout_failed naming the fan-out step; the item carries the child's code and records", async () => {
    const key = uniqueKey("a6-subfail");
    const e = await run("fan-sub", { key, routes: ["echo", "status/400", "echo"] });
    expect(e.status).toBe("failed");
    expect(e.error.code).toBe("fanout_failed");
    expect(e.error.step).toBe("each");
    expect(e.error.message).toMatch(/^1 of 3 items failed .*first: item 1: webhook_failed: /);
    const each = e.steps[0];
    expect(each.status).toBe("failed");
    expect(each.steps.map((s: { id: string; status: string }) => [s.id, s.status])).toEqual([
      ["0", "complete"],
      ["1", "failed"],
    ]);
    expect(each.steps[1].error.code).toBe("webhook_failed");
    expect(each.steps[1].steps.map((s: { id: string; status: string }) => [s.id, s.status])).toEqual([
      ["post", "failed"],
    ]);
    // concurrency 1: item 2 never started, nothing was sent for it.
    expect(await targetLog(key)).toHaveLength(2);
  });
});

describe("a fan-out inside a sub-workflow", () => {
  it("names the slash path in error.step and item keys", async () => {
    const key = uniqueKey("a6-nested");
    const e = await run("fan-nested", { key, routes: ["echo", "echo"] });
    expect(e.status).toBe("complete");
    const log = await targetLog(key);
    expect(log.map((r) => r.headers["idempotency-key"]).sort()).toEqual(
      [0, 1].map((i) => `${e.run_id}:outer/fan/${i}`),
    );
    expect(e.steps[0].steps[0].steps.map((s: { id: string }) => s.id)).toEqual(["0", "1"]);
    expect(e.steps[0].output).toEqual(e.steps[0].steps[0].output);

    const bad = await run("fan-nested", { key: uniqueKey("a6-nested-bad"), routes: ["status/400"] });
    expect(bad.status).toBe("failed");
    expect(bad.error.code).toBe("fanout_failed");
    expect(bad.error.step).toBe("outer/fan");
  });
});

describe("cancel in the middle of a fan-out", () => {
  it("cancels the items in flight, starts no more, and the run ends canceled", async () => {
    const key = uniqueKey("a6-cancel");
    const routes = Array.from({ length: 5 }, () => "hold/5000");
    const runId = await startRun("fan-sub", { key, routes });
    await logUntil(key, (log) => log.length >= 1);
    const res = await call(`/runs/${runId}/cancel`, { method: "POST" });
    expect(res.status).toBe(202);
    const e: Envelope = await waitForRun(runId);
    expect(e.status).toBe("canceled");
    expect(e.steps[0].status).toBe("canceled");
    expect(e.steps[0].steps.map((s: { id: string; status: string }) => [s.id, s.status])).toEqual([
      ["0", "canceled"],
    ]);
    // The records say no other item started; a canceled run sends nothing more.
    expect(await targetLog(key)).toHaveLength(1);
    const ev = events(await (await call(`/runs/${runId}/events`)).text());
    expect(ev.filter((x) => x.step === "each/0").map((x) => x.type)).toEqual([
      "step.started",
      "step.canceled",
    ]);
    expect(ev.filter((x) => x.step === "each").map((x) => x.type)).toEqual(["step.started", "step.canceled"]);
    expect(ev.some((x) => x.step === "each/1")).toBe(false);
    expect(ev.at(-1)?.type).toBe("run.completed");
  });
});

describe("fan-out details", () => {
  it("skips the whole step when its condition is false: no items, no requests", async () => {
    const key = uniqueKey("a6-cond");
    const e = await run("fan-misc", { key, go: false, items: [{ route: "echo" }] });
    expect(e.status).toBe("complete");
    expect(e.steps[0]).toMatchObject({
      status: "skipped",
      output: { skipped: true, reason: "condition_false" },
      steps: [],
    });
    expect(await targetLog(key)).toHaveLength(0);
  });

  it("fails with expression_error when from is not an array", async () => {
    const key = uniqueKey("a6-notarray");
    const e = await run("fan-misc", { key, go: true, items: { route: "echo" } });
    expect(e.status).toBe("failed");
    expect(e.error).toMatchObject({ code: "expression_error", step: "post" });
    expect(e.steps[0].steps).toEqual([]);
    expect(await targetLog(key)).toHaveLength(0);
  });

  it("substitutes item and item_index: types kept, text mixed, percent-encoded after ?", async () => {
    const key = uniqueKey("a6-subst");
    const items = [
      { route: "echo", q: "a b&c" },
      { route: "echo", q: "ü/?" },
    ];
    const e = await run("fan-misc", { key, go: true, items });
    expect(e.status).toBe("complete");
    const [r0, r1] = e.steps[0].output.results;
    expect(r0.body.query).toEqual({ q: "a b&c", i: "0" });
    expect(r1.body.query).toEqual({ q: "ü/?", i: "1" });
    expect(r1.body.body).toEqual({ whole: items[1], label: "n1" });
    expect(r1.body.headers["x-label"]).toBe("item-1");
    expect(e.steps[1].output).toEqual({ result: [200, 200] });
  });

  it("retries an item with the same Idempotency-Key and sums the attempts", async () => {
    const key = uniqueKey("a6-retry");
    const items = [
      { route: "status/503,200", q: "x" },
      { route: "echo", q: "y" },
    ];
    const e = await run("fan-misc", { key, go: true, items });
    expect(e.status).toBe("complete");
    const post = e.steps[0];
    expect(post.steps.map((s: { metrics: { attempts: number } }) => s.metrics.attempts)).toEqual([2, 1]);
    expect(post.metrics.attempts).toBe(3);
    const log = await targetLog(key);
    const keys = log.filter((r) => r.path.startsWith("/status")).map((r) => r.headers["idempotency-key"]);
    expect(keys).toEqual([`${e.run_id}:post/0`, `${e.run_id}:post/0`]);
  });

  it("validates output.schema against the whole {results}", async () => {
    const key = uniqueKey("a6-schema");
    const items = Array.from({ length: 4 }, () => ({ route: "echo", q: "z" }));
    const e = await run("fan-misc", { key, go: true, items });
    expect(e.status).toBe("failed");
    expect(e.error).toMatchObject({ code: "output_schema_mismatch", step: "post" });
    expect(e.steps[0].steps).toHaveLength(4);
  });

  it("keeps failed items' entries as {ktsu_error, item_index} and streams step.failed for them", async () => {
    const key = uniqueKey("a6-failev");
    const items = [
      { route: "status/404", q: "a" },
      { route: "echo", q: "b" },
    ];
    const e = await run("fan-misc", { key, go: true, items });
    expect(e.status).toBe("complete");
    expect(e.steps[0].output.results[0]).toEqual({
      ktsu_error: expect.stringMatching(/^webhook_failed: /),
      item_index: 0,
    });
    expect(Object.keys(e.steps[0].output.results[0]).sort()).toEqual(["item_index", "ktsu_error"]);
    const ev = events(await (await call(`/runs/${e.run_id}/events`)).text());
    const item0 = ev.filter((x) => x.step === "post/0");
    expect(item0.map((x) => x.type)).toEqual(["step.started", "step.failed"]);
    expect(item0[1]?.id).toBe("0");
    expect(item0[1]?.error?.code).toBe("webhook_failed");
  });
});

describe("ktsu's air-lock on workflow steps", () => {
  it("checks a workflow step's child output and a fan-out's {results} against output.schema", async () => {
    const ok = await run("ktsu-output-schema", { key: uniqueKey("a6-air"), routes: ["echo", "echo"] });
    expect(ok.status).toBe("complete");
    expect(ok.steps[0].output.status).toBe(200);

    const first = await run("ktsu-output-schema", { key: uniqueKey("a6-air1"), routes: ["status/201"] });
    expect(first.status).toBe("failed");
    expect(first.error).toMatchObject({ code: "output_schema_mismatch", step: "one" });

    // A tolerated failed item's entry has no `status`: the whole {results} fails the schema.
    const second = await run("ktsu-output-schema", {
      key: uniqueKey("a6-air2"),
      routes: ["echo", "status/400"],
    });
    expect(second.status).toBe("failed");
    expect(second.error).toMatchObject({ code: "output_schema_mismatch", step: "each" });
    expect(second.steps[1].steps.map((s: { status: string }) => s.status)).toEqual(["complete", "failed"]);
  });
});

describe("live events of a fan-out", () => {
  it("streams each item's start and end as they happen, then run.completed", async () => {
    const key = uniqueKey("a6-live");
    const runId = await startRun("fan-sub", { key, routes: ["hold/300", "hold/300"] });
    const res = await call(`/runs/${runId}/events`);
    expect(res.headers.get("content-type")).toMatch(/^text\/event-stream/);
    const ev = events(await res.text());
    for (const step of ["each/0", "each/1"]) {
      expect(ev.filter((x) => x.step === step).map((x) => x.type)).toEqual([
        "step.started",
        "step.completed",
      ]);
      expect(ev.find((x) => x.step === step)?.id).toBe(step.slice(-1));
    }
    const order = ev.map((x) => `${x.type}:${x.step ?? ""}`);
    expect(order.indexOf("step.completed:each/0")).toBeLessThan(order.indexOf("step.started:each/1"));
    expect(order.indexOf("step.completed:each/1")).toBeLessThan(order.indexOf("step.completed:each"));
    expect(ev.at(-1)?.type).toBe("run.completed");
  });
});

describe("for_each.from over the request", () => {
  it("fans out over a declared request header", async () => {
    const key = uniqueKey("a6-req");
    const e = await run("fan-request", { key }, { headers: { "x-routes": "echo,slow/1" } });
    expect(e.status).toBe("complete");
    expect(e.steps[0].output.results.map((r: { status: number }) => r.status)).toEqual([200, 200]);
    expect((await targetLog(key)).map((r) => r.path).sort()).toEqual(["/echo", "/slow/1"]);
  });
});
