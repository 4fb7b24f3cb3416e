/**
 * Carried entries ride together per listing binding (src/run/listing/listing-ride.ts): in a busy
 * isolate whose requests name two RUN_INDEX bindings (the bench's contender with the listing
 * switched off beside the real one), an entry goes only through a carrier of its own binding.
 */
import { describe, expect, it } from "vitest";
import { keepListed } from "../../../src/run/listing/listing-ride.ts";
import { poll } from "../../support/poll.ts";

/** A RUN_INDEX whose shards record what they are sent. */
function binding() {
  const sent: string[] = [];
  const ns = {
    idFromName: (name: string) => name,
    get: () => ({
      recordWritten: async (_ref: unknown, rows: unknown[]) => {
        for (const r of rows) sent.push(JSON.stringify(r));
      },
    }),
  };
  return { sent, env: { RUN_INDEX: ns, LISTING_RIDE_MS: "50" } as unknown as Env };
}

const run = (id: string) => ({
  run_id: id,
  workflow: "wf",
  status: "complete" as const,
  created_at: new Date().toISOString(),
  finished_at: new Date().toISOString(),
});

describe("carried entries riding together", () => {
  it("go only through a carrier of their own listing binding", async () => {
    const real = binding();
    const nowhere = binding();
    // Interleaved, as a busy isolate takes them: each binding's entries, forty of each.
    const all: Array<Promise<void>> = [];
    for (let i = 0; i < 40; i++) {
      all.push(keepListed(real.env, run(`real-${i}`)));
      all.push(keepListed(nowhere.env, run(`nowhere-${i}`)));
    }
    await Promise.all(all);
    // The last carriers send after their window.
    await poll(
      "every entry at its binding's shards",
      () => [real.sent.length, nowhere.sent.length],
      ([a, b]) => a === 40 && b === 40,
    );
    expect(real.sent).toHaveLength(40);
    expect(nowhere.sent).toHaveLength(40);
    expect(real.sent.every((row) => row.includes("real-"))).toBe(true);
  });
});
