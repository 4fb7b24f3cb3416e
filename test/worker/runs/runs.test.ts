/** What a run does, end to end through HTTP: scheduling, conditions, failure, deadline, sub-workflows. */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { call, invoke, run, targetLog, uniqueKey } from "../harness.ts";
import { until } from "../tools-support.ts";

const ITEMS = [
  { name: "pen", price: 2 },
  { name: "free", price: 0 },
  { name: "book", price: 12 },
];

describe("envelope", () => {
  it("has every key, steps in pipeline order, and the last step's output", async () => {
    const e = await run("basic", { items: ITEMS });
    expect(Object.keys(e).sort()).toEqual(
      [
        "run_id",
        "rerun_of",
        "workflow",
        "workflow_version",
        "status",
        "error",
        "params",
        "steps",
        "request",
        "output",
        "totals",
        "scores",
        "budget_usd",
        "coalesced",
        "queue",
        "deliveries",
        "compensation",
        "trace_id",
        "deadline",
        "created_at",
        "finished_at",
      ].sort(),
    );
    expect(e.workflow).toBe("basic");
    expect(e.workflow_version).toBe("1.0.0");
    expect(e.error).toBeNull();
    expect(e.steps.map((s: { id: string }) => s.id)).toEqual([
      "prepare-items",
      "names",
      "vip-only",
      "summary",
    ]);
    for (const s of e.steps) {
      expect(Object.keys(s).sort()).toEqual(
        [
          "id",
          "status",
          "output",
          "error",
          "started_at",
          "finished_at",
          "metrics",
          "tool_calls",
          "annotations",
          "variant",
          "steps",
          "reused_from",
        ].sort(),
      );
      expect(Object.keys(s.metrics).sort()).toEqual(
        ["duration_ms", "tokens_in", "tokens_out", "cost_usd", "llm_calls", "attempts", "tool_calls"].sort(),
      );
      expect(s.tool_calls).toEqual([]);
      expect(s.annotations).toBeNull();
      expect(s.reused_from).toBeNull();
      expect(s.variant).toBeNull();
    }
    expect(e.rerun_of).toBeNull();
    expect(e.steps[0].output).toEqual({
      result: [
        { name: "book", price: 12 },
        { name: "pen", price: 2 },
      ],
    });
    expect(e.steps[1].output).toEqual({ result: ["book", "pen"] });
    expect(e.output).toEqual(e.steps[3].output);
    expect(e.output).toEqual({ result: { first: "book", count: 2, vip_skipped: true } });
    expect(Object.keys(e.totals).sort()).toEqual([
      "cost_usd",
      "duration_ms",
      "llm_calls",
      "scores_cost_usd",
      "tokens_in",
      "tokens_out",
      "tool_calls",
    ]);
    expect(e.scores).toEqual([]);
    expect(e.totals.scores_cost_usd).toBe(0);
    expect(Date.parse(e.created_at)).toBeLessThanOrEqual(Date.parse(e.finished_at));
    expect(Date.parse(e.deadline) - Date.parse(e.created_at)).toBe(300_000);
    expect(e.budget_usd).toBeNull();
  });

  it("skips a step whose condition is false with exactly {skipped, reason}", async () => {
    const e = await run("basic", { items: ITEMS });
    const vip = e.steps[2];
    expect(vip.status).toBe("skipped");
    expect(vip.output).toEqual({ skipped: true, reason: "condition_false" });
    expect(vip.error).toBeNull();
  });

  it("runs the step when its condition holds", async () => {
    const e = await run("basic", { items: ITEMS, tier: "vip" });
    expect(e.steps[2].status).toBe("complete");
    expect(e.steps[2].output).toEqual({
      result: [
        { n: "book", vip: true },
        { n: "pen", vip: true },
      ],
    });
    expect(e.output.result.vip_skipped).toBeNull();
  });
});

describe("scheduling", () => {
  it("runs independent webhook steps concurrently: each 1 s call starts before the other ends", async () => {
    const e = await run("parallel-webhooks");
    expect(e.status).toBe("complete");
    expect(e.output).toEqual({ result: [200, 200] });
    // The steps' own records: one after the other, the second would start after the first ended.
    const [left, right] = e.steps.map((s: { started_at: string; finished_at: string }) => ({
      start: Date.parse(s.started_at),
      end: Date.parse(s.finished_at),
    }));
    expect(left.end - left.start).toBeGreaterThanOrEqual(1000);
    expect(right.end - right.start).toBeGreaterThanOrEqual(1000);
    expect(right.start).toBeLessThan(left.end);
    expect(left.start).toBeLessThan(right.end);
  });

  it("fails the run at the first failed step: running siblings canceled, the rest skipped", async () => {
    const e = await run("fail-fast");
    expect(e.status).toBe("failed");
    expect(e.error).toMatchObject({ code: "webhook_failed", step: "bad" });
    const [bad, slow, never] = e.steps;
    expect(bad.status).toBe("failed");
    expect(bad.error.code).toBe("webhook_failed");
    expect(bad.metrics.attempts).toBe(1);
    expect(slow.status).toBe("canceled");
    expect(never.status).toBe("skipped");
    expect(never.output).toEqual({ skipped: true, reason: "run_failed" });
    expect(e.output).toBeNull();
  });
});

describe("webhook retries", () => {
  it("retries 503, 503, 200 to complete with 3 attempts under one idempotency key", async () => {
    const key = uniqueKey("flaky");
    const e = await run("flaky", { key, codes: "503,503,200" });
    expect(e.status).toBe("complete");
    expect(e.steps[0].metrics.attempts).toBe(3);
    expect(e.steps[0].output.status).toBe(200);
    const log = await targetLog(key);
    expect(log).toHaveLength(3);
    const keys = new Set(log.map((r) => r.headers["idempotency-key"]));
    expect([...keys]).toEqual([`${e.run_id}:call`]);
  });

  it("fails at once on 400 without retrying", async () => {
    const key = uniqueKey("bad");
    const e = await run("flaky", { key, codes: "400" });
    expect(e.status).toBe("failed");
    expect(e.error.code).toBe("webhook_failed");
    expect(e.steps[0].metrics.attempts).toBe(1);
    expect(await targetLog(key)).toHaveLength(1);
  });
});

describe("deadline", () => {
  it("ends a 2 s run against a 15 s endpoint as failed/timeout at its deadline, not the endpoint's answer", async () => {
    const t0 = Date.now();
    const e = await run("deadline");
    const elapsed = Date.now() - t0;
    // Far from the 15 s the endpoint takes (a loaded machine adds seconds, not ten); the deadline
    // itself is checked on the run's own times below.
    expect(elapsed).toBeLessThan(8_000);
    expect(e.status).toBe("failed");
    expect(e.error.code).toBe("timeout");
    expect(e.steps[0].status).toBe("canceled");
    expect(e.steps[1].status).toBe("skipped");
    expect(e.steps[1].output).toEqual({ skipped: true, reason: "run_failed" });
    expect(e.output).toBeNull();
  });
});

describe("cancel and delete", () => {
  it("cancels an active run, then refuses a second cancel, then deletes it", async () => {
    const res = await invoke("deadline");
    const { run_id } = (await res.json()) as { run_id: string };
    // Canceled while its first step runs.
    await until(run_id, (e) => e.steps[0]?.status === "running");
    const cancel = await call(`/runs/${run_id}/cancel`, { method: "POST" });
    expect(cancel.status).toBe(202);
    const e = (await cancel.json()) as { status: string; steps: Array<{ status: string; output: unknown }> };
    expect(e.status).toBe("canceled");
    expect(e.steps[0]?.status).toBe("canceled");
    expect(e.steps[1]?.output).toEqual({ skipped: true, reason: "run_canceled" });
    const again = await call(`/runs/${run_id}/cancel`, { method: "POST" });
    expect(again.status).toBe(409);
    expect(((await again.json()) as { code: string }).code).toBe("run_not_active");
    const del = await call(`/runs/${run_id}`, { method: "DELETE" });
    expect(del.status).toBe(204);
    expect((await call(`/runs/${run_id}`)).status).toBe(404);
  });

  it("refuses to delete an active run", async () => {
    const res = await invoke("deadline");
    const { run_id } = (await res.json()) as { run_id: string };
    const del = await call(`/runs/${run_id}`, { method: "DELETE" });
    expect(del.status).toBe(409);
    await call(`/runs/${run_id}/cancel`, { method: "POST" });
  });
});

describe("sub-workflows", () => {
  it("runs the child inline, nests its steps, and suppresses its webhooks by default", async () => {
    const e = await run("parent", { message: "hi" });
    expect(e.status).toBe("complete");
    const [, notify, loud] = e.steps;
    expect(notify.steps.map((s: { id: string }) => s.id)).toEqual(["format", "post"]);
    expect(notify.steps[0].status).toBe("complete");
    expect(notify.steps[1].status).toBe("skipped");
    expect(notify.steps[1].output).toEqual({ skipped: true, reason: "webhooks_suppressed" });
    expect(notify.output).toEqual({ skipped: true, reason: "webhooks_suppressed" });
    expect(loud.steps[1].status).toBe("complete");
    expect(loud.metrics.attempts).toBe(loud.steps[1].metrics.attempts);
    expect(loud.metrics.attempts).toBe(1);
    expect(loud.steps[1].output.body.body).toEqual({ message: "hi" });
    expect(loud.output).toEqual(loud.steps[1].output);
    expect(e.output).toEqual(loud.output);
  });

  it("skips a workflow step's child steps with the step's own reason when its condition is false", async () => {
    const e = await run("skipped-child");
    expect(e.status).toBe("complete");
    expect(e.steps[0].output).toEqual({ skipped: true, reason: "condition_false" });
    expect(e.steps[0].steps).toEqual([
      expect.objectContaining({
        id: "boom",
        status: "skipped",
        output: { skipped: true, reason: "condition_false" },
      }),
    ]);
  });

  it("fails the workflow step with invalid_input when the input does not match the child's schema", async () => {
    const e = await run("bad-child-input");
    expect(e.status).toBe("failed");
    expect(e.error.code).toBe("invalid_input");
    expect(e.steps[0].status).toBe("failed");
    expect(e.steps[0].steps.map((s: { status: string }) => s.status)).toEqual(["skipped", "skipped"]);
  });

  it("reports a child's failure with its code and the slash path of the failing step", async () => {
    const e = await run("failing-child");
    expect(e.status).toBe("failed");
    expect(e.error).toMatchObject({ code: "expression_error", step: "inner/boom" });
    expect(e.steps[0].error.code).toBe("expression_error");
    expect(e.steps[0].steps[0].status).toBe("failed");
  });
});

describe("secrets", () => {
  it("masks a secret echoed back by a webhook target in every form, while the target received it", async () => {
    const secret = (env as unknown as Record<string, string>).WEBHOOK_SECRET as string;
    const e = await run("echo-secret");
    expect(e.status).toBe("complete");
    const text = JSON.stringify(e);
    const forms = [
      secret,
      btoa(secret),
      btoa(secret).replace(/=+$/, ""),
      encodeURIComponent(`key=${secret}`).replace(/^key%3D/, ""),
      JSON.stringify(secret).slice(1, -1),
    ];
    for (const form of forms) expect(text).not.toContain(form);
    expect(text).toContain("***");
    const stored = await call(`/runs/${e.run_id}`);
    expect(await stored.text()).not.toContain(secret);
    const echoed = e.steps[0].output.body;
    expect(JSON.stringify(echoed)).toContain("Bearer ***");
  });
});
