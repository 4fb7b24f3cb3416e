/**
 * Admission of an invoke that names its run (src/run/start/admission.ts): the rate limit counts it only
 * when it creates the run, over a stand-in for the rate-limit binding. (Whether a run starts or
 * waits is its flow keys': test/run/keys/flow-key-rules.test.ts.)
 */
import { describe, expect, it } from "vitest";
import { type AdmissionPorts, admit } from "../../../src/run/start/admission.ts";

function ports(under: boolean) {
  const calls: string[] = [];
  const p: AdmissionPorts = {
    takeRateLimitSlot: async (slot) => {
      calls.push(`limit ${slot.key}`);
      return under;
    },
  };
  return { p, calls };
}

const slot = { binding: "LIMIT", key: "acme" };

describe("admission", () => {
  it("starts a run of a workflow without a limit, asking nobody", async () => {
    const { p, calls } = ports(true);
    expect(await admit({}, p)).toBe("start");
    expect(calls).toEqual([]);
  });

  it("counts a new run against the limit and refuses it over the limit", async () => {
    const under = ports(true);
    expect(await admit({ rateLimit: slot }, under.p)).toBe("start");
    const over = ports(false);
    expect(await admit({ rateLimit: slot }, over.p)).toBe("rate_limited");
    expect(over.calls).toEqual(["limit acme"]);
  });
});
