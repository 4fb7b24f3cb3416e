/**
 * Keyed signals (docs/file-format.md): a sender that knows only an order id signals every run waiting for it
 * with that key (and no other), through the key's own object; a signal that comes before any such
 * wait is kept and consumed by the first wait that starts.
 */

import { describe, expect, it } from "vitest";
import { poll } from "../../support/poll.ts";
import { call, type Envelope, invoke, waitForRun } from "../../worker/harness.ts";

async function start(orderId: string): Promise<string> {
  const res = await invoke("wait-keyed", { order_id: orderId });
  return ((await res.json()) as { run_id: string }).run_id;
}

async function waiting(runId: string): Promise<void> {
  await poll(
    `${runId}'s first step to wait`,
    async () => (await (await call(`/runs/${runId}`)).json()) as Envelope,
    (e) => e.steps[0].status === "waiting",
    { timeoutMs: 10_000, intervalMs: 30 },
  );
}

function send(key: string, body: unknown): Promise<Response> {
  return call(`/workflows/wait-keyed/signals/paid/${encodeURIComponent(key)}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}

describe("keyed signals", () => {
  it("reach every run waiting with that key, and only those", async () => {
    const key = `order-${crypto.randomUUID()}`;
    const a = await start(key);
    const b = await start(key);
    const other = await start(`${key}-other`);
    await Promise.all([waiting(a), waiting(b), waiting(other)]);
    const res = await send(key, { amount: 9 });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ delivered: 2, runs: [a, b].sort() });
    for (const id of [a, b]) {
      const e = await waitForRun(id);
      expect(e.status).toBe("complete");
      expect(e.output).toEqual({ amount: 9 });
    }
    const still = (await (await call(`/runs/${other}`)).json()) as Envelope;
    expect(still.steps[0].status).toBe("waiting");
    await call(`/runs/${other}/cancel`, { method: "POST" });
  });

  it("keeps a signal that comes before any wait, for the first wait with that key that starts", async () => {
    const key = `early-${crypto.randomUUID()}`;
    const res = await send(key, { amount: 5 });
    expect(res.status).toBe(202);
    expect(await res.json()).toEqual({ delivered: 0, kept: true });
    const first = await start(key);
    const e = await waitForRun(first);
    expect(e.status).toBe("complete");
    expect(e.output).toEqual({ amount: 5 });
    // Consumed: the next run with that key waits.
    const second = await start(key);
    await waiting(second);
    await call(`/runs/${second}/cancel`, { method: "POST" });
  });

  it("answers 422 invalid_signal when the waiting runs' schema refuses the body, and 404 for an unknown workflow", async () => {
    const key = `bad-${crypto.randomUUID()}`;
    const runId = await start(key);
    await waiting(runId);
    const bad = await send(key, { amount_usd: 1 });
    expect(bad.status).toBe(422);
    expect(((await bad.json()) as { code: string }).code).toBe("invalid_signal");
    await waiting(runId);
    await call(`/runs/${runId}/cancel`, { method: "POST" });
    const unknown = await call("/workflows/nope/signals/paid/x", { method: "POST" });
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as { code: string }).code).toBe("workflow_not_found");
  });

  it("answers 404 unknown_signal for a name no wait of the workflow declares, keeping nothing", async () => {
    const typo = await call(`/workflows/wait-keyed/signals/piad/${crypto.randomUUID()}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{}",
    });
    expect(typo.status).toBe(404);
    const refused = (await typo.json()) as { code: string; detail: string };
    expect(refused.code).toBe("unknown_signal");
    expect(refused.detail).toContain("did you mean `paid`?");
  });
});
