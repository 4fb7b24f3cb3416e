/**
 * The order in which a model group's models are tried for one call. The first is the one the
 * strategy picks; the rest are the fallbacks when a provider fails.
 * - `round_robin`: the starting model rotates on every call of the group (per isolate: spreads
 *   load, not a global fairness guarantee).
 * - `cost_optimized`: cheapest first for this call (estimated input tokens at the model's input
 *   price plus max_tokens at its output price); equal prices keep file order.
 */
import type { CompiledGroup } from "../bundle.ts";
import { costUsd, priceOf } from "./pricing.ts";

export type GroupModel = CompiledGroup["models"][number];

const rotation = new Map<string, number>();

/** Starts every round-robin group at its first model again (workflow tests: each case alike). */
export function resetModelRotation(): void {
  rotation.clear();
}

export function modelOrder(group: CompiledGroup, inputTokens: number, maxTokens: number): GroupModel[] {
  const models = group.models;
  if (models.length === 0) return [];
  if (group.strategy === "cost_optimized") {
    const usage = { input_tokens: inputTokens, output_tokens: maxTokens };
    return models
      .map((m, i) => ({ m, i, cost: costUsd(priceOf(group, m.model), usage) }))
      .sort((a, b) => a.cost - b.cost || a.i - b.i)
      .map((x) => x.m);
  }
  const start = (rotation.get(group.name) ?? 0) % models.length;
  rotation.set(group.name, start + 1);
  return [...models.slice(start), ...models.slice(0, start)];
}
