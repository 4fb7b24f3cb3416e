/**
 * Masking for text that arrives in pieces (a model's answer as it streams, docs/agents-and-tools.md,
 * "Streaming"): a secret split across two or more chunks must never reach a reader, so the
 * masker holds back the end of what it has seen that could be the start of a secret (of any of
 * its forms: at most the longest form less one character, usually nothing), and lets text out
 * only up to a point no secret straddles. What it lets out, joined, is exactly `masker.maskText`
 * of everything pushed.
 */
import type { Masker } from "./mask.ts";

export interface StreamMasker {
  /** Takes the next chunk; returns the text that may be shown now (masked; "" when none). */
  push(chunk: string): string;
  /** The stream ended: the rest, masked. */
  flush(): string;
}

export function createStreamMasker(masker: Masker): StreamMasker {
  const forms = masker.forms ?? [];
  let pending = "";

  /** How much of the end of `pending` could be the start of a secret form (kept back until the next chunk). */
  const startOfASecret = (): number => {
    let hold = 0;
    for (const f of forms) {
      // Stryker disable next-line EqualityOperator: at k = hold a match would set hold to what it is
      for (let k = Math.min(f.length - 1, pending.length); k > hold; k--) {
        if (pending.endsWith(f.slice(0, k))) {
          hold = k;
          break;
        }
      }
    }
    return hold;
  };

  /** The largest cut at or before `limit` that no occurrence of a secret form straddles. */
  const safeCut = (limit: number): number => {
    let cut = limit;
    for (let moved = true; moved && cut > 0; ) {
      moved = false;
      for (const f of forms) {
        // An occurrence that starts before the cut and ends after it must stay whole.
        let at = pending.lastIndexOf(f, cut - 1);
        while (at >= 0 && at + f.length > cut) {
          cut = at;
          moved = true;
          // Stryker disable next-line ConditionalExpression: only saves a pass; the outer loop looks again from the moved cut
          at = at > 0 ? pending.lastIndexOf(f, at - 1) : -1;
        }
      }
    }
    return cut;
  };

  return {
    push(chunk) {
      pending += chunk;
      // With no secret nothing is held back: the cut is the end of what came.
      const cut = safeCut(pending.length - startOfASecret());
      const out = masker.maskText(pending.slice(0, cut));
      pending = pending.slice(cut);
      return out;
    },
    flush() {
      const out = masker.maskText(pending);
      pending = "";
      return out;
    },
  };
}
