/**
 * What an LLM call costs, from the group's `pricing` (USD per million tokens, by model id).
 *
 * Before a call the budget reserves its worst case (docs/file-format.md): the serialised request's
 * UTF-8 bytes taken as input tokens (a token is at least one byte, so this never undercounts)
 * at the group's most expensive input price, plus max_tokens at its most expensive output price.
 * After the call the actual cost uses the provider's usage and the price of the model used.
 */
import type { CompiledGroup } from "../bundle.ts";
import type { Usage } from "./provider.ts";

export interface Price {
  inputPerMillion: number;
  outputPerMillion: number;
}

const FREE: Price = { inputPerMillion: 0, outputPerMillion: 0 };

/** The highest input and the highest output price of the group (each on its own). */
export function maxPrice(group: CompiledGroup): Price {
  let inputPerMillion = 0;
  let outputPerMillion = 0;
  for (const p of Object.values(group.pricing)) {
    inputPerMillion = Math.max(inputPerMillion, p.inputPerMillion);
    outputPerMillion = Math.max(outputPerMillion, p.outputPerMillion);
  }
  return { inputPerMillion, outputPerMillion };
}

/**
 * A group without pricing is free. A priced group that lists no price for this model charges
 * the group's highest prices: undercharging would let the budget be overspent.
 */
export function priceOf(group: CompiledGroup, model: string): Price {
  if (Object.keys(group.pricing).length === 0) return FREE;
  return group.pricing[model] ?? maxPrice(group);
}

export function costUsd(price: Price, usage: Usage): number {
  return (
    (usage.input_tokens * price.inputPerMillion) / 1e6 + (usage.output_tokens * price.outputPerMillion) / 1e6
  );
}

export function worstCaseUsd(group: CompiledGroup, requestBytes: number, maxTokens: number): number {
  return costUsd(maxPrice(group), { input_tokens: requestBytes, output_tokens: maxTokens });
}
