/**
 * Admission (src/run/admission.ts): whether an invoke creates its run, and whether the run starts
 * now or waits its turn, over stand-ins for the rate-limit binding and the key's object.
 */
import { describe, expect, it } from "vitest";
import { type AdmissionPorts, admit } from "../../src/run/admission.ts";

function ports(rate: boolean, turn: "start" | "queued") {
  const calls: string[] = [];
  const p: AdmissionPorts = {
    takeRateLimitSlot: async (slot) => {
      calls.push(`limit ${slot.key}`);
      return rate;
    },
    askTurn: async (gate, runId, limit) => {
      calls.push(`turn ${gate} ${runId} ${limit}`);
      return turn;
    },
  };
  return { p, calls };
}

const slot = { binding: "LIMIT", key: "acme" };
const gate = { gate: "deploy\nmain", limit: 1 };

describe("admission", () => {
  it("starts a run of a workflow without a limit or a key, asking nobody", async () => {
    const { p, calls } = ports(true, "start");
    expect(await admit({}, "r1", p)).toBe("start");
    expect(calls).toEqual([]);
  });

  it("refuses an invoke over the rate limit before it takes a place in its key", async () => {
    const { p, calls } = ports(false, "start");
    expect(await admit({ rateLimit: slot, concurrency: gate }, "r1", p)).toBe("rate_limited");
    expect(calls).toEqual(["limit acme"]);
  });

  it("queues a run its key has no free slot for, after counting it against the limit", async () => {
    const { p, calls } = ports(true, "queued");
    expect(await admit({ rateLimit: slot, concurrency: gate }, "r1", p)).toBe("queued");
    expect(calls).toEqual(["limit acme", "turn deploy\nmain r1 1"]);
  });
});
