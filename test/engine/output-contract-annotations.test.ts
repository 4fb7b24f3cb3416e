/**
 * Agent output contracts (docs/agents-and-tools.md): `annotations` are taken from the final output, after a
 * reflect. A reflection that carries no flags, rationale or confidence leaves the step without
 * annotations — not with the draft's.
 */
import { describe, expect, it } from "vitest";
import type { Json } from "../../src/bundle.ts";
import type { Annotations } from "../../src/engine/types.ts";
import { applyContracts } from "../../src/steps/output-contracts.ts";

function recorder() {
  let last: Annotations | null | undefined;
  return {
    annotate: (a: Annotations | null) => {
      last = a;
    },
    get last() {
      return last;
    },
  };
}

const never = async () => {
  throw new Error("no human is asked here");
};

describe("annotations after a reflect", () => {
  it("are the reflection's: none when the reflection has none (the step still fails low_confidence)", async () => {
    const rec = recorder();
    const draft: Json = { answer: "draft", ktsu_confidence: 0.5, ktsu_flags: ["d"], ktsu_rationale: "r1" };
    await expect(
      applyContracts(draft, {
        threshold: 0.7,
        reflect: async () => ({ answer: "revised" }),
        askHuman: never,
        annotate: rec.annotate,
      }),
    ).rejects.toMatchObject({ code: "low_confidence" });
    expect(rec.last).toBeNull();
  });

  it("are the reflection's own flags, rationale and confidence when it passes", async () => {
    const rec = recorder();
    const out = await applyContracts(
      { answer: "draft", ktsu_confidence: 0.2, ktsu_flags: ["d"], ktsu_rationale: "r1" },
      {
        threshold: 0.7,
        reflect: async () => ({ answer: "better", ktsu_confidence: 0.9 }),
        askHuman: never,
        annotate: rec.annotate,
      },
    );
    expect(out).toEqual({ answer: "better" });
    expect(rec.last).toEqual({ flags: [], rationale: null, confidence: 0.9 });
  });
});
