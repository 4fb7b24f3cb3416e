/**
 * Re-runs (docs/http-api.md): a failed run re-run as a new run that reuses what completed (no request sent
 * again) and runs the rest; on the pinned definition or on the one deployed after a fix; `from` a
 * step; in bulk after an outage, each failed run once under concurrent calls; and the errors.
 */

import { evictDurableObject, runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import workflowBundle from "workflow-bundle";
import type { Bundle } from "../../../src/bundle.ts";
import { pinDefinition } from "../../../src/run/run-doc.ts";
import type { RunRpc } from "../../../src/run/run-rpc.ts";
import { poll } from "../../support/poll.ts";
import { call, type Envelope, run, targetLog, uniqueKey, waitForRun } from "../../worker/harness.ts";

const bundle = workflowBundle as Bundle;

function rerun(runId: string, body?: unknown, wait = 30): Promise<Response> {
  return call(`/runs/${runId}/rerun`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(wait > 0 ? { prefer: `wait=${wait}` } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

async function rerunEnvelope(runId: string, body?: unknown): Promise<Envelope> {
  const res = await rerun(runId, body);
  if (res.status !== 200) throw new Error(`re-run answered ${res.status}: ${await res.text()}`);
  return res.json();
}

/** Requests the target saw for `key` from step `step` of any run (told apart by their Idempotency-Key). */
async function sent(key: string, step: string) {
  return (await targetLog(key)).filter((r) => r.headers["idempotency-key"]?.endsWith(`:${step}`));
}

/** Waits until the run listing shows every run of `ids` as failed (it lags a run by up to ~10 s). */
async function listedFailed(workflow: string, ids: string[]): Promise<void> {
  await poll(
    `every run of ${workflow} listed as failed`,
    async () => {
      const res = await call(`/runs?workflow=${workflow}&status=failed&limit=100`);
      expect(res.status).toBe(200);
      const list = (await res.json()) as { runs: Array<{ run_id: string }> };
      return ids.filter((id) => !list.runs.some((r) => r.run_id === id));
    },
    (missing) => missing.length === 0,
    { timeoutMs: 12_000, intervalMs: 50 },
  );
}

const byId = (e: Envelope) => Object.fromEntries(e.steps.map((s: Envelope) => [s.id, s]));

describe("POST /runs/{id}/rerun", () => {
  it("re-runs a failed run as a new run: completed steps are reused (not sent again), the failed one and its dependents run", async () => {
    const key = uniqueKey("rerun");
    const old = await run("recover-rerun", { key, ship_route: "status/500" });
    expect(old.status).toBe("failed");
    expect(old.rerun_of).toBeNull();
    const e = await rerunEnvelope(old.run_id, { params: { key, ship_route: "echo" } });
    expect(e.run_id).not.toBe(old.run_id);
    expect(e.rerun_of).toBe(old.run_id);
    expect(e.status).toBe("complete");
    const s = byId(e);
    expect(s.prepare.reused_from).toBe(old.run_id);
    expect(s.charge.reused_from).toBe(old.run_id);
    expect(s.charge.output).toEqual(byId(old).charge.output);
    expect(s.ship.reused_from).toBeNull();
    expect(s.done.reused_from).toBeNull();
    expect(e.output).toEqual({ result: { order: key, shipped: true } });
    // The charge went out once, in the old run; the shipment again, with the new run's key.
    const charges = await sent(key, "charge");
    expect(charges).toHaveLength(1);
    expect(charges[0]?.headers["idempotency-key"]).toBe(`${old.run_id}:charge`);
    const ships = await sent(key, "ship");
    expect(ships.map((r) => r.headers["idempotency-key"])).toEqual([
      `${old.run_id}:ship`,
      `${e.run_id}:ship`,
    ]);
    // The reused step's cost belongs to the old run.
    expect(e.totals.llm_calls).toBe(0);
  });

  it("answers 202 with the new run id, rerun_of and a Location without Prefer: wait", async () => {
    const key = uniqueKey("rerun-202");
    const old = await run("recover-rerun", { key, ship_route: "status/500" });
    const res = await rerun(old.run_id, { params: { key, ship_route: "echo" } }, 0);
    expect(res.status).toBe(202);
    const body = (await res.json()) as { run_id: string; status: string; rerun_of: string };
    expect(body).toEqual({
      run_id: expect.stringMatching(/^[0-9a-f]{64}$/),
      status: "accepted",
      rerun_of: old.run_id,
    });
    expect(res.headers.get("location")).toBe(`/runs/${body.run_id}`);
    expect((await waitForRun(body.run_id)).status).toBe("complete");
  });

  it("keeps the old params by default: the same failure fails again, on the same reused charge", async () => {
    const key = uniqueKey("rerun-same");
    const old = await run("recover-rerun", { key, ship_route: "status/500" });
    const e = await rerunEnvelope(old.run_id);
    expect(e.status).toBe("failed");
    expect(e.params).toEqual(old.params);
    expect(byId(e).charge.reused_from).toBe(old.run_id);
    expect(byId(e).ship.status).toBe("failed");
  });

  it("names the run where a step actually executed, through a re-run of a re-run", async () => {
    const key = uniqueKey("rerun-twice");
    const first = await run("recover-rerun", { key, ship_route: "status/500" });
    const second = await rerunEnvelope(first.run_id);
    expect(second.status).toBe("failed");
    const third = await rerunEnvelope(second.run_id, { params: { key, ship_route: "echo" } });
    expect(third.status).toBe("complete");
    expect(third.rerun_of).toBe(second.run_id);
    expect(byId(third).charge.reused_from).toBe(first.run_id);
  });

  it("with from, re-runs that step and everything downstream of it, even in a complete run", async () => {
    const key = uniqueKey("rerun-from");
    const old = await run("recover-rerun", { key, ship_route: "echo" });
    expect(old.status).toBe("complete");
    const e = await rerunEnvelope(old.run_id, { from: "charge" });
    expect(e.status).toBe("complete");
    const s = byId(e);
    expect(s.prepare.reused_from).toBe(old.run_id);
    for (const id of ["charge", "ship", "done"]) expect(s[id].reused_from).toBeNull();
    const charges = await sent(key, "charge");
    expect(charges.map((r) => r.headers["idempotency-key"])).toEqual([
      `${old.run_id}:charge`,
      `${e.run_id}:charge`,
    ]);
  });

  it("re-runs on the definition deployed now: the fix just shipped completes what the old definition failed", async () => {
    const key = uniqueKey("rerun-fixed");
    // The run started on an earlier deployment whose ship step called a route that fails.
    const broken = pinDefinition(bundle, bundle.invocable["recover-rerun"] as string);
    const wfKey = bundle.invocable["recover-rerun"] as string;
    const wf = structuredClone(broken.workflows[wfKey]);
    const ship = wf?.steps.find((s) => s.id === "ship");
    if (!wf || ship?.kind !== "webhook") throw new Error("fixture changed");
    ship.url = {
      t: "concat",
      parts: [{ e: "env.TARGET_URL" }, "/status/500?step=ship&key=", { e: "params.key", encode: true }],
    } as typeof ship.url;
    broken.workflows[wfKey] = wf;
    const stub = env.RUNS.get(env.RUNS.newUniqueId()) as unknown as RunRpc;
    const started = await stub.start({
      workflowKey: wfKey,
      params: { key, ship_route: "echo" },
      request: { headers: {} },
      bodyHash: null,
      idempotencyKey: null,
      waitMs: 20_000,
      definition: broken,
    });
    const old = started.outcome === "started" ? started.envelope : null;
    expect(old?.status).toBe("failed");
    const oldId = old?.run_id as string;
    // On its pinned (old) definition it fails again ...
    expect((await rerunEnvelope(oldId)).status).toBe("failed");
    // ... on the current one it completes, reusing the charge.
    const e = await rerunEnvelope(oldId, { definition: "current" });
    expect(e.status).toBe("complete");
    expect(byId(e).charge.reused_from).toBe(oldId);
    expect(await sent(key, "charge")).toHaveLength(1);
  });

  it("keeps its reused records through an eviction of the new run", async () => {
    const key = uniqueKey("rerun-evict");
    const old = await run("recover-rerun", { key, ship_route: "status/500" });
    const res = await rerun(old.run_id, { params: { key, ship_route: "slow/600" } }, 0);
    const { run_id } = (await res.json()) as { run_id: string };
    const stub = env.RUNS.get(env.RUNS.idFromString(run_id));
    await evictDurableObject(stub);
    await runDurableObjectAlarm(stub);
    const e = await waitForRun(run_id);
    expect(e.status).toBe("complete");
    expect(byId(e).charge.reused_from).toBe(old.run_id);
    expect(await sent(key, "charge")).toHaveLength(1);
  });
});

describe("re-run errors", () => {
  it("answers 404 run_not_found for an unknown run", async () => {
    const res = await rerun("f".repeat(64), {});
    expect(res.status).toBe(404);
    expect(res.headers.get("content-type")).toBe("application/problem+json");
    expect(((await res.json()) as { code: string }).code).toBe("run_not_found");
  });

  it("answers 409 run_active while the run is still going", async () => {
    const key = uniqueKey("rerun-active");
    const started = await call("/invoke/recover-rerun", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ key, ship_route: "slow/1500" }),
    });
    const { run_id } = (await started.json()) as { run_id: string };
    const res = await rerun(run_id, {});
    expect(res.status).toBe(409);
    expect(((await res.json()) as { code: string }).code).toBe("run_active");
    await waitForRun(run_id);
  });

  it("answers 409 nothing_to_rerun for a complete run without from, and 400 unknown_step for a from that names no step", async () => {
    const key = uniqueKey("rerun-errors");
    const old = await run("recover-rerun", { key, ship_route: "echo" });
    const none = await rerun(old.run_id, {});
    expect(none.status).toBe(409);
    expect(((await none.json()) as { code: string }).code).toBe("nothing_to_rerun");
    const unknown = await rerun(old.run_id, { from: "nope" });
    expect(unknown.status).toBe(400);
    expect(((await unknown.json()) as { code: string }).code).toBe("unknown_step");
    const bad = await rerun(old.run_id, { from: "charge", definition: "latest" });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { code: string }).code).toBe("invalid_rerun");
  });

  it("answers 422 invalid_params for params that fail the schema, and starts nothing", async () => {
    const key = uniqueKey("rerun-params");
    const old = await run("recover-rerun", { key, ship_route: "status/500" });
    const res = await rerun(old.run_id, { params: { key } });
    expect(res.status).toBe(422);
    expect(((await res.json()) as { code: string }).code).toBe("invalid_params");
    // Not counted as a re-run: a bulk re-run still takes it.
    await listedFailed("recover-rerun", [old.run_id]);
    const bulk = await call("/runs/rerun?workflow=recover-rerun&status=failed&limit=100", { method: "POST" });
    const body = (await bulk.json()) as { runs: Array<{ rerun_of: string }> };
    expect(body.runs.map((r) => r.rerun_of)).toContain(old.run_id);
  });
});

describe("POST /runs/rerun (bulk)", () => {
  it("re-runs every failed run of the workflow exactly once under concurrent calls", async () => {
    const key = uniqueKey("bulk");
    const failed: string[] = [];
    for (let i = 0; i < 6; i++) {
      const e = await run("recover-bulk", { key: `${key}-${i}`, ship_route: "status/500" });
      failed.push(e.run_id);
    }
    await listedFailed("recover-bulk", failed);
    const answers = await Promise.all(
      [1, 2, 3, 4].map(() =>
        call("/runs/rerun?workflow=recover-bulk&status=failed&limit=100", { method: "POST" }),
      ),
    );
    const reruns: Array<{ rerun_of: string; run_id: string }> = [];
    for (const res of answers) {
      expect(res.status).toBe(200);
      const body = (await res.json()) as { runs: typeof reruns; next_cursor: string | null };
      expect(body.next_cursor).toBeNull();
      reruns.push(...body.runs);
    }
    const of = reruns.map((r) => r.rerun_of).filter((id) => failed.includes(id));
    expect(of.sort()).toEqual([...failed].sort());
    for (const r of reruns.filter((x) => failed.includes(x.rerun_of))) {
      const e = await waitForRun(r.run_id);
      expect(e.rerun_of).toBe(r.rerun_of);
    }
  });

  it("takes only runs created at or after since, and answers invalid_query for a bad status or since", async () => {
    const future = new Date(Date.now() + 3600_000).toISOString();
    const res = await call(`/runs/rerun?workflow=recover-bulk&status=failed&since=${future}`, {
      method: "POST",
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ runs: [], next_cursor: null });
    for (const q of ["status=complete", "since=yesterday", "limit=500"]) {
      const bad = await call(`/runs/rerun?workflow=recover-bulk&${q}`, { method: "POST" });
      expect(bad.status).toBe(400);
      expect(((await bad.json()) as { code: string }).code).toBe("invalid_query");
    }
  });
});
