/**
 * The run lifecycle over the in-memory store, a manual clock and a shell that records what it is
 * asked to do (wake-ups, effects): what test/run's lifecycle tests drive.
 */
import { afterAll } from "vitest";
import type { Bundle, Json } from "../../../src/bundle.ts";
import type { Clock } from "../../../src/engine/clock.ts";
import type { Executors } from "../../../src/engine/run-host.ts";
import type { StepContext } from "../../../src/engine/types.ts";
import type { KvPort } from "../../../src/run/kv-port.ts";
import { RunLifecycle } from "../../../src/run/lifecycle/lifecycle.ts";
import type { RunShell } from "../../../src/run/lifecycle/lifecycle-io.ts";
import type { LifecycleRuntime } from "../../../src/run/lifecycle/run-engine.ts";
import { HEARTBEAT_MS, type RunEffect, type Wake } from "../../../src/run/lifecycle/run-plan.ts";
import { memoryKv } from "../../../src/run/memory-kv.ts";
import { RunStore } from "../../../src/run/run-store.ts";
import { compileFiles, removeProjects } from "../../compiler/temp-project.ts";

afterAll(removeProjects);

export const WORKFLOW = `kind: workflow
name: plan
version: 1.0.0
params:
  schema: { type: object }
pipeline:
  - id: shape
    transform: { ops: [] }
  - id: call
    condition: params.call
    webhook: { url: "https://example.com/hook" }
`;

export const bundle = (() => {
  let b: Bundle | null = null;
  return () => {
    if (b) return b;
    const p = compileFiles({ "plan.workflow.yaml": WORKFLOW });
    if (!p.result.bundle) throw new Error(p.errors.map((e) => e.message).join("\n"));
    b = p.result.bundle;
    return b;
  };
})();

/** A clock whose time the test sets; timers are not used by these runs. */
export function manualClock(start: number): Clock & { t: number } {
  const c = {
    t: start,
    now: () => c.t,
    setTimer: () => () => {},
  };
  return c;
}

/** Counts the rows written to a memory store, and what is read of it. */
export function countingKv(): { kv: KvPort; puts: string[]; reads: string[] } {
  const inner = memoryKv();
  const puts: string[] = [];
  const reads: string[] = [];
  return {
    puts,
    reads,
    kv: {
      ...inner,
      put: (k, v) => {
        puts.push(k);
        inner.put(k, v);
      },
      get: (k) => {
        reads.push(k);
        return inner.get(k);
      },
      list: (prefix) => {
        reads.push(`${prefix}*`);
        return inner.list(prefix);
      },
    },
  };
}

export interface Recorded {
  wakes: Array<Wake | null>;
  effects: RunEffect["type"][];
}

export function setup(
  webhook: () => Promise<Json>,
  clock = manualClock(Date.parse("2026-11-25T12:00:00Z")),
  env: Record<string, unknown> = {},
) {
  const { kv, puts, reads } = countingKv();
  const rec: Recorded = { wakes: [], effects: [] };
  const shell: RunShell = {
    wake: (w) => rec.wakes.push(w),
    perform: (effects) => rec.effects.push(...effects.map((e) => e.type)),
  };
  const runtime: LifecycleRuntime = {
    env,
    executors: {
      transform: async () => ({ result: {} }),
      webhook: (_s: unknown, _c: StepContext) => webhook(),
    } as unknown as Executors,
    fetch: () => Promise.reject(new Error("no network")),
    clock,
    outboundLimit: 6,
    allowPrivate: false,
    notifyFetch: () => Promise.reject(new Error("no network")),
  };
  const run = new RunLifecycle(new RunStore(kv), runtime, shell, {
    heartbeatMs: HEARTBEAT_MS,
    retentionMs: 7 * 86_400_000,
  });
  return { run, puts, reads, rec, clock, kv };
}

export const start = (call: boolean) => ({
  runId: "a".repeat(64),
  bundle: bundle(),
  workflowKey: "plan.workflow.yaml",
  params: { call },
  request: { headers: {} },
  bodyHash: null,
  idempotencyKey: null,
  origin: null,
});

export const never = () => new Promise<Json>(() => {});
