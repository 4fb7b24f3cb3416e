/**
 * A queued run's way through its flow keys (docs/triggers.md, "Shaping bursts"), as rules over its
 * `flow`: which key it asks next and how (`admit` where the key does not know it yet, `turn`
 * where it does), what a key's answer means (go on, wait, or refused), and which keys it gives
 * back at its end. The lifecycle applies them; the Durable Object performs the asking.
 */
import type { CompiledWorkflow, JsonObject } from "../../bundle.ts";
import { flowPlan } from "../keys/flow-gates.ts";
import type { AdmitVerdict, TurnVerdict } from "../keys/flow-key-types.ts";
import type { RunFlow } from "../run-doc.ts";
import type { RunEffect } from "./run-plan.ts";

/** The `ask_turn` effect of a run waiting at `flow.at`. */
export function askAt(flow: RunFlow, params: JsonObject): RunEffect | null {
  const gate = flow.gates[flow.at];
  if (!gate) return null;
  return { type: "ask_turn", gate, admit: !flow.admitted, priority: flow.priority, params };
}

/**
 * A key said go: the run passes it (and every key before it). "stale": a go from a key the run
 * had passed already (a begin sent twice); "next": it waits at the next key now; "start": it has
 * passed them all.
 */
export function passGate(flow: RunFlow, gate: string | undefined): "stale" | "next" | "start" {
  const i = gate === undefined ? flow.at : flow.gates.findIndex((g) => g.name === gate);
  if (i < 0 || i < flow.at) return "stale";
  flow.at = i + 1;
  flow.admitted = false;
  flow.reason = null;
  flow.startsAt = null;
  return flow.at < flow.gates.length ? "next" : "start";
}

/** What a key's answer to `ask_turn` means for the run waiting there. */
export type KeyAnswer =
  | { go: true; params?: JsonObject; coalesced?: number }
  | { go: false; changed: boolean }
  | { refused: "skipped" | "queue_full" };

export function answerOf(flow: RunFlow, verdict: AdmitVerdict | TurnVerdict): KeyAnswer {
  switch (verdict.outcome) {
    case "start":
      return {
        go: true,
        ...("params" in verdict ? { params: verdict.params, coalesced: verdict.coalesced } : {}),
      };
    case "queued":
    case "joined": {
      const changed = !flow.admitted || flow.reason !== verdict.reason || flow.startsAt !== verdict.startsAt;
      flow.admitted = true;
      flow.reason = verdict.reason;
      flow.startsAt = verdict.startsAt;
      return { go: false, changed };
    }
    case "skipped":
      return { refused: "skipped" };
    case "queue_full":
      return { refused: "queue_full" };
  }
}

/**
 * A debounced run begins with its last invoke's params: the keys it passes after its group's are
 * rendered from them (a batch run keeps its first invoke's). The gates already passed stay.
 */
export function rekeyAfterGroup(
  flow: RunFlow,
  wf: CompiledWorkflow,
  seen: { params: JsonObject; request: JsonObject },
): void {
  if (!flow.gates[0]?.settings.debounce) return;
  const plan = flowPlan(wf, seen);
  if (!plan) return;
  flow.gates = [...flow.gates.slice(0, flow.at), ...plan.gates.slice(flow.at)];
}
