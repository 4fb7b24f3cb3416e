/**
 * The engine alone, in Node: `runPipeline` over the bench bundle with a host that keeps records in
 * memory and serializes each finished step as the Durable Object does before its INSERT, but
 * stores nothing. This isolates the engine's cost per step from workerd, RPC and SQLite, and a
 * CPU profile (node:inspector) of the same loop names the functions that cost the most.
 */
import { Session } from "node:inspector/promises";
import type { Bundle, Json } from "../src/bundle.ts";
import { createLedger } from "../src/engine/budget.ts";
import { createMasker } from "../src/engine/mask.ts";
import type { RunHost } from "../src/engine/run-host.ts";
import { runPipeline } from "../src/engine/scheduler.ts";
import type { StepRecord } from "../src/engine/types.ts";
import { executors } from "../src/steps/index.ts";
import { ROOT } from "./dev-server.ts";
import { BENCH_PARAMS, pipelineName } from "./pipelines.ts";

function workflowKey(bundle: Bundle, steps: number): string {
  const key = bundle.invocable[pipelineName(steps)];
  if (!key) throw new Error(`${pipelineName(steps)} is not in the bench bundle`);
  return key;
}

async function runOnce(bundle: Bundle, key: string): Promise<Json> {
  const wf = bundle.workflows[key];
  if (!wf) throw new Error(`no workflow ${key}`);
  const records = new Map<string, StepRecord>();
  let serialized = 0;
  const host: RunHost = {
    bundle,
    runId: "bench",
    env: {},
    executors,
    masker: createMasker([]),
    fetch: () => Promise.reject(new Error("no network in the engine bench")),
    now: () => Date.now(),
    restored: new Map(),
    records,
    onStepFinished: (_path, rec) => {
      serialized += JSON.stringify(rec).length;
    },
  };
  const out = await runPipeline(host, wf, {
    prefix: "",
    params: BENCH_PARAMS,
    env: {},
    deadline: Date.now() + 60_000,
    signal: new AbortController().signal,
    budget: createLedger(null),
    webhooksAllowed: true,
  });
  if (serialized === 0) throw new Error("no step finished");
  return out;
}

/** Mean µs per run of the N-step bench pipeline, after warm-up. */
async function usPerRun(bundle: Bundle, steps: number, runs: number): Promise<number> {
  const key = workflowKey(bundle, steps);
  for (let i = 0; i < Math.min(200, runs); i++) await runOnce(bundle, key);
  const t0 = performance.now();
  for (let i = 0; i < runs; i++) await runOnce(bundle, key);
  return ((performance.now() - t0) * 1000) / runs;
}

export interface EngineProfile {
  us1: number;
  us50: number;
  /** (us50 - us1) / 49: the engine's own cost per transform step, without storage. */
  usPerStep: number;
  /** Functions with the most self time while running the 50-step pipeline, with their share. */
  hot: Array<{ fn: string; share: number }>;
}

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}

export async function profileEngine(bundle: Bundle): Promise<EngineProfile> {
  const us1 = await usPerRun(bundle, 1, 4000);
  const us50 = await usPerRun(bundle, 50, 400);

  const session = new Session();
  session.connect();
  await session.post("Profiler.enable");
  await session.post("Profiler.setSamplingInterval", { interval: 100 });
  await session.post("Profiler.start");
  const key = workflowKey(bundle, 50);
  for (let i = 0; i < 400; i++) await runOnce(bundle, key);
  const { profile } = (await session.post("Profiler.stop")) as {
    profile: { nodes: ProfileNode[]; samples: number[] };
  };
  session.disconnect();

  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map<string, number>();
  for (const id of profile.samples) {
    const f = byId.get(id)?.callFrame;
    if (!f) continue;
    const file = f.url.replace(/^file:\/\//, "").replace(ROOT, "");
    const name = `${f.functionName || "(anonymous)"} ${file ? `${file}:${f.lineNumber + 1}` : ""}`.trim();
    self.set(name, (self.get(name) ?? 0) + 1);
  }
  const total = profile.samples.length || 1;
  const hot = [...self.entries()]
    .filter(([name]) => !name.startsWith("(idle)") && !name.startsWith("(program)"))
    .sort((a, b) => b[1] - a[1])
    .slice(0, 8)
    .map(([fn, n]) => ({ fn, share: n / total }));
  return { us1, us50, usPerStep: (us50 - us1) / 49, hot };
}
