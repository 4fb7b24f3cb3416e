/**
 * The flow keys an invoke passes (docs/triggers.md, "Shaping bursts"): each setting's `key`
 * rendered from the invoke's own params and request, the settings whose keys render alike living
 * in one key object, in the order a run passes them — its grouping key (debounce, batch), its
 * throttle key, its concurrency key. A `cancel_on` entry joins the key object of its key (or
 * watches from one of its own). A workflow that declares none of it passes no key at all.
 */
import type { CompiledWorkflow, Json, JsonObject, Template } from "../../bundle.ts";
import { render } from "../../engine/substitute.ts";
import { type FlowGate, flowKeyName } from "./flow-key-rpc.ts";
import type { FlowSettings } from "./flow-key-types.ts";
import { renderInvokeKey } from "./invoke-keys.ts";

export interface FlowPlan {
  /** The keys the run passes, in order (the first one decides whether a new run is made at all). */
  gates: FlowGate[];
  /** Keys where only a `cancel_on` of the run lives. */
  watches: Array<{ name: string; signals: string[] }>;
  /** -100..100. */
  priority: number;
}

const NONE: FlowSettings = { throttle: null, debounce: null, batch: null, concurrency: null };

/** The flow keys of an invoke of `wf` with these inputs, or null when it declares no flow control. */
export function flowPlan(
  wf: CompiledWorkflow,
  seen: { params: JsonObject; request: JsonObject },
  /** False for a re-run or a schedule: they pass the keys but join no debounce group or batch. */
  coalesce = true,
): FlowPlan | null {
  const inv = wf.invoke;
  const cancelOn = wf.cancelOn ?? [];
  const grouping = coalesce && (inv.debounce || inv.batch);
  if (!inv.concurrency && !inv.throttle && !grouping && cancelOn.length === 0) return null;
  const gates: FlowGate[] = [];
  const gateFor = (key: Template | null | undefined): FlowGate => {
    const name = flowKeyName(wf.name, key ? renderInvokeKey(key, seen) : "");
    let g = gates.find((x) => x.name === name);
    if (!g) {
      g = { name, settings: { ...NONE }, cancelOn: [] };
      gates.push(g);
    }
    return g;
  };
  if (coalesce && inv.debounce)
    gateFor(inv.debounce.key).settings.debounce = {
      periodMs: inv.debounce.periodMs,
      maxWaitMs: inv.debounce.maxWaitMs,
    };
  else if (coalesce && inv.batch)
    gateFor(inv.batch.key).settings.batch = { maxItems: inv.batch.maxItems, maxWaitMs: inv.batch.maxWaitMs };
  if (inv.throttle)
    gateFor(inv.throttle.key).settings.throttle = {
      limit: inv.throttle.limit,
      periodMs: inv.throttle.periodMs,
    };
  if (inv.concurrency)
    gateFor(inv.concurrency.key).settings.concurrency = {
      limit: inv.concurrency.limit,
      onFull: inv.concurrency.onFull ?? "queue",
    };
  const watches: FlowPlan["watches"] = [];
  for (const c of cancelOn) {
    const name = flowKeyName(wf.name, c.key ? renderInvokeKey(c.key, seen) : "");
    const target = gates.find((g) => g.name === name) ?? watches.find((w) => w.name === name);
    if (target && "settings" in target) {
      if (!target.cancelOn.includes(c.signal)) target.cancelOn.push(c.signal);
    } else if (target) {
      if (!target.signals.includes(c.signal)) target.signals.push(c.signal);
    } else watches.push({ name, signals: [c.signal] });
  }
  return { gates, watches, priority: priorityOf(inv.priority ?? null, seen) };
}

/** `invoke.priority`: a JSON integer, clamped to -100..100; anything else (a string, a fraction, null) is 0. */
export function priorityOf(tpl: Template | null, seen: { params: JsonObject; request: JsonObject }): number {
  if (!tpl) return 0;
  let v: Json;
  try {
    v = render(tpl, { params: seen.params, env: {}, step: {}, request: seen.request });
  } catch {
    return 0;
  }
  return typeof v === "number" && Number.isInteger(v) ? Math.max(-100, Math.min(100, v)) : 0;
}

/** The signal names of `cancel_on` entries of `wf` (what the keyed route accepts besides waits). */
export function cancelSignals(wf: CompiledWorkflow): Set<string> {
  return new Set((wf.cancelOn ?? []).map((c) => c.signal));
}
