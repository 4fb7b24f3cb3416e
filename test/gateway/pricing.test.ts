/**
 * What an LLM call costs and what the budget reserves before it (docs/file-format.md "Budget",
 * section 7 pricing).
 */
import { describe, expect, it } from "vitest";
import type { CompiledGroup } from "../../src/bundle.ts";
import { costUsd, priceOf, worstCaseUsd } from "../../src/gateway/pricing.ts";
import { utf8Length } from "../../src/gateway/provider.ts";

function group(pricing: CompiledGroup["pricing"]): CompiledGroup {
  return {
    name: "g",
    models: Object.keys(pricing).map((model) => ({ provider: "openai", model })),
    strategy: "round_robin",
    defaultMaxTokens: 1024,
    pricing,
  };
}

const mixed = group({
  small: { inputPerMillion: 0.15, outputPerMillion: 0.6 },
  large: { inputPerMillion: 2.5, outputPerMillion: 10 },
  odd: { inputPerMillion: 3, outputPerMillion: 1 },
});

describe("pricing", () => {
  it("costs input and output tokens at the used model's per-million prices", () => {
    const cost = costUsd(priceOf(mixed, "small"), { input_tokens: 1000, output_tokens: 500 });
    expect(Math.abs(cost - (1000 * 0.15 + 500 * 0.6) / 1e6)).toBeLessThan(1e-12);
  });

  it("makes every call of a group without pricing free", () => {
    const free = group({});
    expect(costUsd(priceOf(free, "anything"), { input_tokens: 1e6, output_tokens: 1e6 })).toBe(0);
    expect(worstCaseUsd(free, 10_000, 4096)).toBe(0);
  });

  it("charges a model missing from a priced group at the group's highest prices", () => {
    expect(priceOf(mixed, "unlisted")).toEqual({ inputPerMillion: 3, outputPerMillion: 10 });
  });

  it("reserves request bytes at the highest input price plus max_tokens at the highest output price", () => {
    expect(worstCaseUsd(mixed, 2000, 100)).toBeCloseTo((2000 * 3 + 100 * 10) / 1e6, 15);
  });

  it("counts the request's UTF-8 bytes, not its characters", () => {
    expect(utf8Length("héllo €")).toBe(10);
  });
});
