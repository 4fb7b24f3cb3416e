/**
 * invoke.priority (docs/triggers.md, "Shaping bursts"): within a key's queue a higher priority
 * starts first, equal ones in invoke order.
 */
import { describe, expect, it } from "vitest";
import { type Envelope, invoke, uniqueKey, waitForRun } from "../harness.ts";
import { arrivals } from "./bursts.ts";

describe("invoke.priority", () => {
  it("starts queued runs by priority, then in invoke order", async () => {
    const group = uniqueKey("priority");
    const send = async (n: number, priority: number, hold_ms = 50) =>
      (await (await invoke("burst-priority", { group, n, priority, hold_ms })).json()) as {
        run_id: string;
        status: string;
      };
    const ids = [(await send(0, 0, 3000)).run_id];
    // While the first one runs: 1 and 2 at 0, 3 at 5, 4 at -3, 5 at 5.
    const verdicts: string[] = [];
    for (const [n, p] of [
      [1, 0],
      [2, 0],
      [3, 5],
      [4, -3],
      [5, 5],
    ] as const) {
      const answer = await send(n, p);
      ids.push(answer.run_id);
      verdicts.push(answer.status);
    }
    const lastAnswered = Date.now();
    expect(verdicts).toEqual(Array(5).fill("queued"));
    const runs: Envelope[] = await Promise.all(ids.map((id) => waitForRun(id, {}, 20_000)));
    expect(runs.map((r) => r.status)).toEqual(Array(6).fill("complete"));
    // The five were queued together: the first run still held the key when the last was answered.
    expect(Date.parse(runs[0]?.steps[0].finished_at)).toBeGreaterThan(lastAnswered);
    expect((await arrivals(group)).map((a) => a.body.n)).toEqual([0, 3, 5, 1, 2, 4]);
  });
});
