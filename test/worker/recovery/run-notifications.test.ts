/**
 * Notifications of finished runs (docs/file-format.md, docs/triggers.md "Deliveries"): after the
 * run's answer, each `notify:` entry whose `on` holds the final status gets one POST, masked,
 * signed with Standard Webhooks (checked with the `standardwebhooks` package as the oracle),
 * retried on its schedule with one `webhook-id`, and delivered even when the run's object is
 * killed before it got through.
 */

import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { Webhook } from "standardwebhooks";
import { describe, expect, it } from "vitest";
import { poll } from "../../support/poll.ts";
import { call, invoke, type LoggedRequest, run, targetLog, uniqueKey } from "../harness.ts";

const SIGNING_SECRET = (env as unknown as Record<string, string>).SIGNING_SECRET as string;

/** The notifications `receiver` got for `runId` (bodies name their run), once `count` have come. */
function notifications(receiver: string, runId: string, count = 1, timeoutMs = 15_000) {
  return poll(
    `${count} notification(s) of ${runId} at ${receiver}`,
    async () => (await targetLog(receiver)).filter((r) => r.body.includes(runId)),
    (mine) => mine.length >= count,
    { timeoutMs, intervalMs: 50 },
  );
}

function verified(r: LoggedRequest): unknown {
  return new Webhook(SIGNING_SECRET).verify(r.body, {
    "webhook-id": r.headers["webhook-id"] as string,
    "webhook-timestamp": r.headers["webhook-timestamp"] as string,
    "webhook-signature": r.headers["webhook-signature"] as string,
  });
}

describe("run notifications", () => {
  it("POSTs run.failed, signed, with the run's error masked and its re-run and view links", async () => {
    const key = uniqueKey("notify-failed");
    // The failing URL's path carries a secret value: the error quotes it, the notification must not.
    const e = await run("recover-notify", { key, route: `status/500/${SIGNING_SECRET}` });
    expect(e.status).toBe("failed");
    const [got] = await notifications("notify-all", e.run_id);
    if (!got) throw new Error("no notification");
    expect(got.method).toBe("POST");
    expect(got.headers["webhook-id"]).toBe(`msg_${e.run_id}_run.failed`);
    const body = verified(got) as Record<string, unknown>;
    expect(body).toEqual({
      type: "run.failed",
      run_id: e.run_id,
      workflow: "recover-notify",
      status: "failed",
      error: e.error,
      created_at: e.created_at,
      finished_at: e.finished_at,
      // Absolute, on the origin the run was invoked at (the harness's `http://workflow.test`).
      rerun_url: `http://workflow.test/runs/${e.run_id}/rerun`,
      view_url: `http://workflow.test/runs/${e.run_id}/view`,
    });
    expect(got.body).not.toContain(SIGNING_SECRET);
    expect(JSON.stringify(e.error)).toContain("***");
  });

  it("POSTs run.complete to the entries that ask for it, and nothing to the others", async () => {
    const key = uniqueKey("notify-complete");
    const e = await run("recover-notify", { key, route: "echo" });
    expect(e.status).toBe("complete");
    const [got] = await notifications("notify-all", e.run_id);
    expect((verified(got as LoggedRequest) as { type: string }).type).toBe("run.complete");
    // The run's own record of what it owes: one delivery, delivered, to notify-all; none to the
    // slow receiver, which hears only of canceled runs.
    const own = (await (await call(`/runs/${e.run_id}/deliveries`)).json()) as {
      deliveries: Array<{ url: string; state: string }>;
    };
    expect(own.deliveries).toHaveLength(1);
    expect(own.deliveries[0]?.url).toMatch(/\/echo\?key=notify-all$/);
    expect(own.deliveries[0]?.state).toBe("delivered");
    expect((await targetLog("notify-slow")).filter((r) => r.body.includes(e.run_id))).toEqual([]);
  });

  it("retries a receiver that answers 503 with the same webhook-id until it takes it (3 attempts)", async () => {
    const e = await run("recover-notify-flaky");
    expect(e.status).toBe("failed");
    const got = await notifications("notify-flaky", e.run_id, 3);
    expect(got).toHaveLength(3);
    expect(new Set(got.map((r) => r.headers["webhook-id"]))).toEqual(new Set([`msg_${e.run_id}_run.failed`]));
    // The delivery's own record: delivered on the third attempt, nothing more due.
    const d = await poll(
      `${e.run_id}'s notification delivered`,
      async () =>
        (
          (await (await call(`/runs/${e.run_id}/deliveries`)).json()) as {
            deliveries: Array<{ state: string; attempts: unknown[]; next_attempt_at: string | null }>;
          }
        ).deliveries[0],
      (x) => x?.state === "delivered",
    );
    expect(d?.attempts).toHaveLength(3);
    expect(d?.next_attempt_at).toBeNull();
    expect(await notifications("notify-flaky", e.run_id, 3)).toHaveLength(3);
  });

  it("is delivered after the run's object is killed in the middle of sending it", async () => {
    const key = uniqueKey("notify-evict");
    const res = await invoke("recover-notify", { key, route: "slow/1000" });
    const { run_id } = (await res.json()) as { run_id: string };
    const cancel = await call(`/runs/${run_id}/cancel`, { method: "POST" });
    expect(cancel.status).toBe(202);
    // The slow receiver has the first attempt in hand; the object goes away under it.
    await notifications("notify-slow", run_id, 1);
    const stub = env.RUNS.get(env.RUNS.idFromString(run_id));
    // The object is killed (not drained): the attempt in flight dies with it.
    await runInDurableObject(stub, (_o, state) => state.abort("killed mid-delivery")).catch(() => {});
    // Its alarm brings it back and it sends again: at least once, with the same id.
    const fresh = env.RUNS.get(env.RUNS.idFromString(run_id));
    expect(await runDurableObjectAlarm(fresh)).toBe(true);
    const got = await notifications("notify-slow", run_id, 2, 20_000);
    // The second entry sending run.canceled: its id adds its index in `notify:`.
    expect(new Set(got.map((r) => r.headers["webhook-id"]))).toEqual(
      new Set([`msg_${run_id}_run.canceled_1`]),
    );
    expect(JSON.parse(got[1]?.body ?? "{}")).toMatchObject({
      type: "run.canceled",
      run_id,
      status: "canceled",
    });
  });
});
