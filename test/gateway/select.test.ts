/** Which model of a group a call tries first, and which next (docs/agents-and-tools.md `strategy`). */
import { describe, expect, it } from "vitest";
import type { CompiledGroup } from "../../src/bundle.ts";
import { modelOrder } from "../../src/gateway/select.ts";

let seq = 0;
function group(strategy: CompiledGroup["strategy"], pricing: CompiledGroup["pricing"], models: string[]) {
  return {
    name: `select-${++seq}`,
    models: models.map((model) => ({ provider: "p", model })),
    strategy,
    defaultMaxTokens: 1024,
    pricing,
  } satisfies CompiledGroup;
}
const names = (g: CompiledGroup) => modelOrder(g, 100, 100).map((m) => m.model);

describe("model selection", () => {
  it("round_robin rotates the first model on every call and keeps the others as fallbacks", () => {
    const g = group("round_robin", {}, ["a", "b", "c"]);
    expect([names(g), names(g), names(g), names(g)]).toEqual([
      ["a", "b", "c"],
      ["b", "c", "a"],
      ["c", "a", "b"],
      ["a", "b", "c"],
    ]);
  });

  it("cost_optimized tries the cheapest model first, then the next cheapest", () => {
    const pricing = {
      a: { inputPerMillion: 5, outputPerMillion: 15 },
      b: { inputPerMillion: 0.1, outputPerMillion: 0.4 },
      c: { inputPerMillion: 1, outputPerMillion: 2 },
    };
    const g = group("cost_optimized", pricing, ["a", "b", "c"]);
    expect(names(g)).toEqual(["b", "c", "a"]);
    expect(names(g)).toEqual(["b", "c", "a"]);
  });

  it("cost_optimized keeps file order between equally priced models", () => {
    const g = group("cost_optimized", {}, ["x", "y"]);
    expect(names(g)).toEqual(["x", "y"]);
  });
});
