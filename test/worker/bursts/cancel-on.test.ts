/**
 * cancel_on (docs/triggers.md, "Shaping bursts"): a keyed signal cancels every active run of its
 * key — running or queued — and none of another key; its answer names them; a later invoke of the
 * key runs as usual.
 */
import { describe, expect, it } from "vitest";
import { call, type Envelope, invoke, uniqueKey, waitForRun } from "../harness.ts";

async function start(group: string, hold_ms = 50): Promise<string> {
  return ((await (await invoke("burst-cancel", { group, hold_ms })).json()) as { run_id: string }).run_id;
}

function signal(key: string): Promise<Response> {
  return call(`/workflows/burst-cancel/signals/order_canceled/${encodeURIComponent(key)}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: "{}",
  });
}

describe("cancel_on", () => {
  it("cancels the running and queued runs of its key, only those, and names them", async () => {
    const order = uniqueKey("order");
    const other = uniqueKey("order-other");
    const mine = [await start(order, 5000), await start(order), await start(order)];
    const theirs = await start(other, 300);
    const res = await signal(order);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      delivered: 0,
      runs: [],
      canceled: 3,
      canceled_runs: [...mine].sort(),
    });
    const runs: Envelope[] = await Promise.all(mine.map((id) => waitForRun(id)));
    expect(runs.map((r) => [r.status, r.error?.code])).toEqual(
      Array(3).fill(["canceled", "canceled_by_signal"]),
    );
    // The queued ones never started.
    expect(runs[1].steps[0].started_at).toBeNull();
    expect((await waitForRun(theirs)).status).toBe("complete");
    // A later run of the key is not canceled by the signal that came before it.
    expect((await waitForRun(await start(order))).status).toBe("complete");
  });

  it("answers 200 with zeros when no run of the key is active", async () => {
    const res = await signal(uniqueKey("order-none"));
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ delivered: 0, runs: [], canceled: 0, canceled_runs: [] });
  });
});
