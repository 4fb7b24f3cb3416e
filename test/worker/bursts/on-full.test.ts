/**
 * concurrency.on_full (docs/triggers.md, "Shaping bursts"): `skip` makes no run while the key is
 * busy and names the run that is; `replace` cancels the oldest active run and the new one takes
 * its place.
 */

import { describe, expect, it } from "vitest";
import { poll } from "../../support/poll.ts";
import { invoke, uniqueKey, waitForRun } from "../harness.ts";
import { arrivals } from "./bursts.ts";

async function send(workflow: string, body: unknown) {
  const res = await invoke(workflow, body);
  return { status: res.status, body: (await res.json()) as { run_id: string; status: string } };
}

describe("concurrency.on_full", () => {
  it("skip: an invoke while the key's run is active makes no run and answers 202 skipped with that run's id", async () => {
    const group = uniqueKey("skip");
    const first = await send("burst-skip", { group, n: 1, hold_ms: 800 });
    expect(first.body.status).toBe("accepted");
    const second = await send("burst-skip", { group, n: 2 });
    expect(second).toEqual({ status: 202, body: { run_id: first.body.run_id, status: "skipped" } });
    expect((await waitForRun(first.body.run_id)).status).toBe("complete");
    // Once the key is free, the next invoke runs. The run gives its slot back just after its end
    // (an effect after its last write), so an invoke right at the end may still be skipped: ask
    // until the key has heard of the end, as a client retrying a skipped invoke would.
    const third = await poll(
      "an invoke the free key takes",
      () => send("burst-skip", { group, n: 3 }),
      (r) => r.body.status !== "skipped",
      { intervalMs: 100 },
    );
    expect(third.body.status).toBe("accepted");
    expect((await waitForRun(third.body.run_id)).status).toBe("complete");
    expect((await arrivals(group)).map((a) => a.body.n)).toEqual([1, 3]);
  });

  it("replace: an invoke while the key's run is active cancels it (replaced) and runs instead", async () => {
    const group = uniqueKey("replace");
    const first = await send("burst-replace", { group, n: 1, hold_ms: 5000 });
    const second = await send("burst-replace", { group, n: 2 });
    expect(second.status).toBe(202);
    expect(second.body.run_id).not.toBe(first.body.run_id);
    const [old, now] = await Promise.all([waitForRun(first.body.run_id), waitForRun(second.body.run_id)]);
    expect(old.status).toBe("canceled");
    expect(old.error.code).toBe("replaced");
    expect(now.status).toBe("complete");
  });
});
