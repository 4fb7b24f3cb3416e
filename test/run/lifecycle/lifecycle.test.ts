/**
 * The run lifecycle over the in-memory store (src/run/lifecycle/lifecycle.ts): the transitions a user sees
 * in the envelope — a resumed run that does not repeat a finished webhook, a step that waits for
 * a human, a cancel while it waits — without a Durable Object. Executors are stand-ins that count
 * their calls; the Worker's end-to-end tests cover the real ones.
 */

import { afterAll, describe, expect, it } from "vitest";
import type { Bundle, Json } from "../../../src/bundle.ts";
import { systemClock } from "../../../src/engine/clock.ts";
import type { Executors } from "../../../src/engine/run-host.ts";
import type { StepContext } from "../../../src/engine/types.ts";
import type { KvPort } from "../../../src/run/kv-port.ts";
import { RunLifecycle } from "../../../src/run/lifecycle/lifecycle.ts";
import type { LifecycleRuntime } from "../../../src/run/lifecycle/run-engine.ts";
import { memoryKv } from "../../../src/run/memory-kv.ts";
import { RunStore } from "../../../src/run/run-store.ts";
import { compileFiles, removeProjects } from "../../compiler/temp-project.ts";
import { poll } from "../../support/poll.ts";

afterAll(removeProjects);

const WORKFLOW = `kind: workflow
name: life
version: 1.0.0
params:
  schema: { type: object }
pipeline:
  - id: charge
    webhook:
      url: "https://payments.example.com/charge"
      body: { amount: 5 }
  - id: ship
    depends_on: [charge]
    webhook:
      url: "https://warehouse.example.com/ship"
      body: { order: "{{ step.charge.body }}" }
`;

function bundle(): Bundle {
  const p = compileFiles({ "life.workflow.yaml": WORKFLOW });
  if (!p.result.bundle) throw new Error(p.errors.map((e) => e.message).join("\n"));
  return p.result.bundle;
}

type WebhookBehaviour = (path: string, ctx: StepContext) => Promise<Json>;

function runtime(webhook: WebhookBehaviour): LifecycleRuntime {
  const fail = () => Promise.reject(new Error("not used"));
  return {
    env: {},
    executors: {
      webhook: (_step: unknown, ctx: StepContext) => webhook(ctx.path, ctx),
      transform: fail,
      agent: fail,
    } as unknown as Executors,
    fetch: fail,
    clock: systemClock,
    outboundLimit: 6,
    allowPrivate: false,
    notifyFetch: fail,
  };
}

function lifecycle(kv: KvPort, webhook: WebhookBehaviour): RunLifecycle {
  return new RunLifecycle(new RunStore(kv), runtime(webhook));
}

const START = { params: {}, request: { headers: {} }, bodyHash: null, idempotencyKey: null, origin: null };

/** A webhook stand-in that first waits for a human (as a gated tool call does). */
function askHuman(ctx: StepContext) {
  if (!ctx.approvals) throw new Error("no approvals host");
  return ctx.approvals.request(
    { key: "k1", kind: "tool", server: null, tool: "charge", arguments: {}, timeoutS: null, notify: null },
    ctx.signal,
  );
}

/** Starts the run and returns once its first approval waits. */
async function startWaiting(run: RunLifecycle, runId: string): Promise<void> {
  run.start({ ...START, runId, bundle: bundle(), workflowKey: "life.workflow.yaml" });
  await until(() => run.approvals()?.length === 1);
}

async function until(check: () => boolean): Promise<void> {
  await poll(check.toString(), check, (ok) => ok, { timeoutMs: 5_000, intervalMs: 5 });
}

const CHECKPOINTS = `kind: workflow
name: checkpoints
version: 1.0.0
params:
  schema: { type: object }
pipeline:
  - id: price
    transform:
      ops: []
  - id: charge
    webhook: { url: "https://payments.example.com/charge" }
  - id: receipt
    transform:
      ops: []
  - id: ship
    webhook: { url: "https://warehouse.example.com/ship" }
`;

describe("the run lifecycle", () => {
  it("after an eviction, re-runs only what finished after the last checkpoint: a transform again, never a sent webhook", async () => {
    const p = compileFiles({ "checkpoints.workflow.yaml": CHECKPOINTS });
    const b = p.result.bundle as Bundle;
    const kv = memoryKv();
    const calls: string[] = [];
    const executors = (shipHangs: boolean) =>
      ({
        webhook: (_step: unknown, ctx: StepContext) => {
          calls.push(ctx.path);
          return shipHangs && ctx.path === "ship" ? new Promise(() => {}) : Promise.resolve({ status: 200 });
        },
        transform: (_step: unknown, ctx: StepContext) => {
          calls.push(ctx.path);
          return Promise.resolve({ result: [] });
        },
        agent: () => Promise.reject(new Error("not used")),
      }) as unknown as Executors;
    const first = new RunLifecycle(new RunStore(kv), {
      ...runtime(() => Promise.reject()),
      executors: executors(true),
    });
    first.start({ ...START, runId: "r0", bundle: b, workflowKey: "checkpoints.workflow.yaml" });
    await until(() => calls.includes("ship"));
    // `price` rode with `charge`'s checkpoint; `receipt` finished after it.
    const second = new RunLifecycle(new RunStore(kv), {
      ...runtime(() => Promise.reject()),
      executors: executors(false),
    });
    second.load();
    await second.ended();
    expect(calls).toEqual(["price", "charge", "receipt", "ship", "receipt", "ship"]);
    expect(second.envelope().status).toBe("complete");
  });

  it("resumes an evicted run from storage without sending a finished webhook again", async () => {
    const kv = memoryKv();
    const calls: string[] = [];
    const b = bundle();
    // First incarnation: `charge` answers, `ship` never does (the object is evicted mid-step).
    const first = lifecycle(kv, (path) => {
      calls.push(path);
      return path === "charge"
        ? Promise.resolve({ status: 200, headers: {}, body: "ok" })
        : new Promise(() => {});
    });
    first.start({ ...START, runId: "r1", bundle: b, workflowKey: "life.workflow.yaml" });
    await until(() => calls.includes("ship"));
    expect(first.envelope().steps.find((s) => s.id === "charge")?.status).toBe("complete");

    // Second incarnation over the same storage: `charge` is restored, `ship` runs again.
    const second = lifecycle(kv, (path) => {
      calls.push(path);
      return Promise.resolve({ status: 200, headers: {}, body: "shipped" });
    });
    second.load();
    await second.ended();
    expect(calls).toEqual(["charge", "ship", "ship"]);
    const env = second.envelope();
    expect(env.status).toBe("complete");
    expect(env.steps.map((s) => s.status)).toEqual(["complete", "complete"]);
  });

  it("resumes a step from its checkpoint after an eviction keeping when it first started", async () => {
    const kv = memoryKv();
    const b = bundle();
    const first = lifecycle(kv, async (path, ctx) => {
      if (path === "charge") return { status: 200, headers: {}, body: "ok" };
      ctx.checkpoint?.save({ turn: 1 });
      return new Promise(() => {}); // evicted mid-step
    });
    first.start({ ...START, runId: "r5", bundle: b, workflowKey: "life.workflow.yaml" });
    await until(
      () => first.envelope().steps[1]?.status === "running" && kv.get("checkpoint/ship") !== undefined,
    );
    const startedAt = first.envelope().steps[1]?.started_at;
    // The clock moves on before the resume: a start written again would show it.
    await poll(
      "the clock to pass the step's start",
      () => Date.now(),
      (now) => now > Date.parse(startedAt as string),
    );
    let resumedWith: Json = null;
    const second = lifecycle(kv, async (path, ctx) => {
      resumedWith = ctx.checkpoint?.load() ?? null;
      return { status: 200, headers: {}, body: path };
    });
    second.load();
    await second.ended();
    expect(resumedWith).toEqual({ turn: 1 });
    expect(second.envelope().steps[1]?.started_at).toBe(startedAt);
  });

  it("shows a step waiting for a human as pending_approval, and running again once approved", async () => {
    const statuses: string[] = [];
    const run: RunLifecycle = lifecycle(memoryKv(), async (path, ctx) => {
      if (path !== "charge") return { status: 200, headers: {}, body: "shipped" };
      const outcome = await askHuman(ctx);
      statuses.push(String(run.envelope().steps[0]?.status));
      return { status: 200, headers: {}, body: outcome.status };
    });
    await startWaiting(run, "r2");
    expect(run.envelope().steps[0]?.status).toBe("pending_approval");
    const id = run.approvals()?.[0]?.id as string;
    expect(run.decide({ id }, "approved", "fine").outcome).toBe("decided");
    await run.ended();
    expect(statuses).toEqual(["running"]);
    expect(run.envelope().status).toBe("complete");
    expect(run.envelope().steps[0]?.output).toMatchObject({ body: "approved" });
  });

  it("shows a workflow step whose child waits for a human as pending_approval too, then running", async () => {
    const p = compileFiles({
      "parent.workflow.yaml": `kind: workflow
name: parent
version: 1.0.0
params:
  schema: { type: object }
pipeline:
  - id: review
    workflow: ./sub/review.workflow.yaml
    webhooks: execute
`,
      "sub/review.workflow.yaml": `kind: workflow
name: review
version: 1.0.0
visibility: sub-workflow
params:
  schema: { type: object }
pipeline:
  - id: charge
    webhook: { url: "https://payments.example.com/charge" }
`,
    });
    const b = p.result.bundle;
    if (!b) throw new Error(p.errors.map((e) => e.message).join("\n"));
    const statuses: string[] = [];
    const run: RunLifecycle = lifecycle(memoryKv(), async (_path, ctx) => {
      const outcome = await askHuman(ctx);
      statuses.push(String(run.envelope().steps[0]?.status));
      return { status: 200, headers: {}, body: outcome.status };
    });
    run.start({ ...START, runId: "r4", bundle: b, workflowKey: "parent.workflow.yaml" });
    await until(() => run.approvals()?.length === 1);
    const waiting = run.envelope().steps[0];
    expect(waiting?.status).toBe("pending_approval");
    expect(waiting?.steps[0]?.status).toBe("pending_approval");
    run.decide({ id: run.approvals()?.[0]?.id as string }, "approved", null);
    await run.ended();
    expect(statuses).toEqual(["running"]);
    expect(run.envelope().status).toBe("complete");
  });

  it("cancels a run whose step waits for a human: the step is canceled and the approval times out", async () => {
    const run = lifecycle(memoryKv(), async (_path, ctx) => {
      await askHuman(ctx);
      return null;
    });
    await startWaiting(run, "r3");
    expect(run.cancel().outcome).toBe("canceled");
    const env = run.envelope();
    expect(env.status).toBe("canceled");
    expect(env.steps.map((s) => s.status)).toEqual(["canceled", "skipped"]);
    expect(run.approvals()?.[0]?.status).toBe("timeout");
    expect(run.cancel().outcome).toBe("not_active");
  });
});
