/**
 * Jurisdictions (docs/operations.md, "Jurisdictions"): a workflow with `residency` has every
 * Durable Object that holds its runs' data made in that jurisdiction — its runs' objects (their
 * deliveries and sub-workflows with them), its flow keys, its signal keys, its listing shards and
 * directory — and every route finds a run from its id alone. Local runtimes ignore jurisdictions,
 * so these tests check the calls made on each namespace (test/worker/namespace-calls.ts). The
 * workerd tests share one isolate: objects of other files may be at work meanwhile, so every
 * check picks the calls that name this file's workflows or runs.
 */

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { poll } from "../support/poll.ts";
import { call, type Envelope, invoke, waitForRun } from "../worker/harness.ts";
import { type NamespaceCall, recordNamespaceCalls } from "../worker/namespace-calls.ts";

let recorder: ReturnType<typeof recordNamespaceCalls>;
beforeAll(() => {
  recorder = recordNamespaceCalls();
});
afterAll(() => recorder.stop());

/** The calls recorded while `fn` ran. */
async function during(fn: () => Promise<unknown>): Promise<NamespaceCall[]> {
  const from = recorder.calls.length;
  await fn();
  return recorder.calls.slice(from);
}

const hexOf = (runId: string) => runId.replace(/^[a-z-]+-/, "");

/** Every call that reached the run's object: through the `eu` namespace only. */
function expectRunReachedInEu(calls: NamespaceCall[], runId: string): void {
  const hex = hexOf(runId);
  const reached = calls.filter((c) => c.binding === "RUNS" && c.arg === hex && c.method === "get");
  expect(reached.length).toBeGreaterThan(0);
  expect(reached.filter((c) => c.jurisdiction !== "eu")).toEqual([]);
}

async function post(path: string, body: unknown = {}): Promise<Response> {
  return call(path, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}

async function listed(runId: string): Promise<void> {
  await poll(
    `${runId} listed as finished`,
    async () =>
      (
        (await (await call("/runs?workflow=residency-eu&limit=100")).json()) as {
          runs: Array<{ run_id: string; status: string }>;
        }
      ).runs.find((r) => r.run_id === runId),
    (r) => r !== undefined && r.status !== "running" && r.status !== "pending",
    { timeoutMs: 12_000, intervalMs: 50 },
  );
}

describe("a workflow with residency: eu", () => {
  let runId = "";
  let created: NamespaceCall[] = [];

  it("gives its run an id that names the jurisdiction, its object made in it", async () => {
    created = await during(async () => {
      const res = await invoke("residency-eu", { order: "o-1" });
      expect(res.status).toBe(202);
      runId = ((await res.json()) as { run_id: string }).run_id;
    });
    expect(runId).toMatch(/^eu-[0-9a-f]{64}$/);
    const made = created.filter((c) => c.binding === "RUNS" && c.method === "newUniqueId");
    expect(made).toEqual([{ binding: "RUNS", jurisdiction: "eu", method: "newUniqueId", arg: hexOf(runId) }]);
    expectRunReachedInEu(created, runId);
  });

  it("asks its flow key (concurrency, cancel_on) and its signal key in the jurisdiction", async () => {
    // The keyed wait registers with its signal key right after the run starts.
    await poll(
      "a call on SIGNAL_KEYS",
      () => recorder.calls.some((c) => c.binding === "SIGNAL_KEYS"),
      (yes) => yes,
    );
    const keys = recorder.calls.filter(
      (c) => (c.binding === "FLOW_KEYS" || c.binding === "SIGNAL_KEYS") && c.arg.startsWith("residency-eu\n"),
    );
    const named = keys.filter((c) => c.method === "idFromName");
    expect(named.map((c) => [c.binding, c.jurisdiction, c.arg])).toEqual(
      expect.arrayContaining([
        ["FLOW_KEYS", "eu", "residency-eu\no-1"],
        ["SIGNAL_KEYS", "eu", "residency-eu\npaid\no-1"],
      ]),
    );
    expect(named.every((c) => c.jurisdiction === "eu")).toBe(true);
  });

  it("reaches the run from its id alone on every route: read, graph, events, approvals, signals, deliveries", async () => {
    const calls = await during(async () => {
      expect((await call(`/runs/${runId}`)).status).toBe(200);
      expect((await call(`/runs/${runId}/graph`)).status).toBe(200);
      expect((await call(`/runs/${runId}/approvals`)).status).toBe(200);
      expect((await call(`/runs/${runId}/view`)).status).toBe(200);
      // The keyed signal goes to the key's object in the jurisdiction, which hands it to the run.
      const signal = await post("/workflows/residency-eu/signals/paid/o-1", {});
      expect(await signal.json()).toEqual({ delivered: 1, runs: [runId] });
      const done: Envelope = await waitForRun(runId);
      expect(done.status).toBe("complete");
      // The sub-workflow ran in the run's own object: its output is in the envelope.
      expect(done.steps.find((s: { id: string }) => s.id === "receipt")?.output).toEqual({ result: "o-1" });
      const events = await call(`/runs/${runId}/events`);
      expect(events.status).toBe(200);
      await events.body?.cancel();
      expect((await call(`/runs/${runId}/deliveries`)).status).toBe(200);
    });
    expectRunReachedInEu(calls, runId);
    const signalKeys = calls.filter(
      (c) => c.binding === "SIGNAL_KEYS" && c.method === "idFromName" && c.arg.startsWith("residency-eu\n"),
    );
    expect(signalKeys.length).toBeGreaterThan(0);
    expect(signalKeys.filter((c) => c.jurisdiction !== "eu")).toEqual([]);
    // A sub-workflow makes no object of its own.
    const made = calls.filter(
      (c) => c.binding === "RUNS" && (c.method === "newUniqueId" || c.method === "idFromName"),
    );
    expect(made).toEqual([]);
  });

  it("lists the run from shards and a directory in the jurisdiction, and its deliveries from them", async () => {
    const calls = await during(async () => {
      await listed(runId);
      const deliveries = await call("/deliveries?workflow=residency-eu");
      const body = (await deliveries.json()) as { deliveries: Array<{ id: string; run_id: string }> };
      const mine = body.deliveries.find((d) => d.run_id === runId);
      expect(mine?.id).toMatch(new RegExp(`^msg_${runId}_`));
      // A delivery's id names its run: the retry reaches it in the jurisdiction too.
      expect((await post(`/deliveries/${mine?.id}/retry`)).status).toBe(202);
    });
    const index = calls.filter(
      (c) => c.binding === "RUN_INDEX" && c.method === "idFromName" && c.arg.startsWith("residency-eu"),
    );
    expect(index.map((c) => c.arg)).toContain("residency-eu");
    expect(index.every((c) => c.jurisdiction === "eu")).toBe(true);
    // The run object itself wrote its entry to a shard of its own jurisdiction.
    const written = created
      .concat(recorder.calls)
      .filter(
        (c) => c.binding === "RUN_INDEX" && c.method === "idFromName" && c.arg.startsWith("residency-eu\n"),
      );
    expect(written.length).toBeGreaterThan(0);
    expect(written.filter((c) => c.jurisdiction !== "eu")).toEqual([]);
    expectRunReachedInEu(calls, runId);
  });

  it("re-runs it in the jurisdiction, with an id that says so", async () => {
    let rerunId = "";
    const calls = await during(async () => {
      const res = await post(`/runs/${runId}/rerun`, { from: "receipt" });
      expect(res.status).toBe(202);
      rerunId = ((await res.json()) as { run_id: string }).run_id;
      expect((await waitForRun(rerunId)).status).toBe("complete");
    });
    expect(rerunId).toMatch(/^eu-[0-9a-f]{64}$/);
    expect(calls.filter((c) => c.binding === "RUNS" && c.method === "newUniqueId")).toEqual([
      { binding: "RUNS", jurisdiction: "eu", method: "newUniqueId", arg: hexOf(rerunId) },
    ]);
    expectRunReachedInEu(calls, runId);
    expectRunReachedInEu(calls, rerunId);
  });

  it("cancels by a cancel_on signal through its flow key in the jurisdiction, and deletes the run there", async () => {
    const res = await invoke("residency-eu", { order: "o-2" });
    const second = ((await res.json()) as { run_id: string }).run_id;
    const calls = await during(async () => {
      const signal = await post("/workflows/residency-eu/signals/order_canceled/o-2", {});
      expect(((await signal.json()) as { canceled_runs: string[] }).canceled_runs).toEqual([second]);
      expect((await waitForRun(second)).status).toBe("canceled");
      await listed(second);
      expect((await call(`/runs/${second}`, { method: "DELETE" })).status).toBe(204);
    });
    expect(calls.filter((c) => c.binding === "FLOW_KEYS" && c.method === "idFromName")).toContainEqual({
      binding: "FLOW_KEYS",
      jurisdiction: "eu",
      method: "idFromName",
      arg: "residency-eu\no-2",
    });
    expectRunReachedInEu(calls, second);
  });

  it("never reaches one of its objects outside the jurisdiction", () => {
    const outside = recorder.calls.filter(
      (c) =>
        c.jurisdiction === null &&
        c.method !== "jurisdiction" &&
        (c.arg.startsWith("residency-eu") || c.arg.includes(hexOf(runId))),
    );
    expect(outside).toEqual([]);
  });
});

describe("jurisdictions by name", () => {
  it("starts fedramp-high runs under an id that names it, read back from that id", async () => {
    const res = await invoke("residency-fedramp-high", { n: 1 }, { wait: 10 });
    const envelope = (await res.json()) as Envelope;
    expect(envelope.run_id).toMatch(/^fedramp-high-[0-9a-f]{64}$/);
    const calls = await during(async () => {
      expect((await call(`/runs/${envelope.run_id}`)).status).toBe(200);
    });
    expect(
      calls.filter((c) => c.binding === "RUNS" && c.method === "get" && c.arg === hexOf(envelope.run_id)),
    ).toEqual([
      { binding: "RUNS", jurisdiction: "fedramp-high", method: "get", arg: hexOf(envelope.run_id) },
    ]);
  });

  it("reaches a workflow's objects in no jurisdiction when it has no residency", async () => {
    let runId = "";
    const calls = await during(async () => {
      const res = await invoke("schedule-headers", {}, { wait: 10 });
      const envelope = (await res.json()) as Envelope;
      runId = envelope.run_id;
      expect(runId).toMatch(/^[0-9a-f]{64}$/);
      expect((await call(`/runs/${runId}`)).status).toBe(200);
    });
    // Everything that names the run or the workflow's objects, made and reached in the namespace itself.
    const mine = calls.filter((c) => c.arg === runId || c.arg.startsWith("schedule-headers"));
    expect(mine.some((c) => c.binding === "RUNS" && c.method === "newUniqueId")).toBe(true);
    expect(mine.filter((c) => c.jurisdiction !== null)).toEqual([]);
  });

  it("answers 404 run_not_found for an id with a jurisdiction there is not", async () => {
    const res = await call(`/runs/mars-${"a".repeat(64)}`);
    expect(res.status).toBe(404);
    expect(((await res.json()) as { code: string }).code).toBe("run_not_found");
  });
});
