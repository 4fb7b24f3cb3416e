/**
 * CPU time per run of the workerd process (user + system, from /proc), which a busy machine
 * disturbs far less than wall time: another process taking the cores makes our requests wait,
 * but does not make them burn more CPU. Contenders run in alternating blocks so that drift is
 * shared (every other round in reverse order); every block is followed by a pause of `settleMs`
 * so that work a run leaves behind (its listing write, its shard's batch, the guard alarm that
 * fires seconds after a run ended) is counted with it, and that pause is the quiet the next block
 * starts from. What workerd burns while idle (its own timers, at 10 ms clock ticks) is measured
 * in an empty stretch of each round and subtracted per millisecond of each block, so a slow
 * contender is not charged for the idling its longer blocks contain. Each round's figure is kept:
 * how far the rounds' ratios spread says how far one figure can be trusted on this machine.
 */
import { readdirSync, readFileSync } from "node:fs";
import { LISTING_GUARD_MS } from "../src/run/lifecycle/run-plan.ts";
import type { Runner } from "./latency.ts";

/**
 * The quiet after a block of runs before its CPU is read: what a finished run of ours leaves behind
 * is done by then (its shard writes the batch holding its entry FLUSH_WINDOW_MS after the first
 * entry; its guard alarm fires LISTING_GUARD_MS after its end and asks whether it is written).
 */
export const AFTER_RUNS_SETTLE_MS = LISTING_GUARD_MS + 1_500;

/** The workerd children of this Node process (Miniflare starts one each), found through /proc. */
export function workerdPids(): number[] {
  const out: number[] = [];
  for (const d of readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const m = /^\d+ \((.*)\) \S (\d+)/.exec(readFileSync(`/proc/${d}/stat`, "utf8"));
      if (m?.[1]?.startsWith("workerd") && Number(m[2]) === process.pid) out.push(Number(d));
    } catch {
      // The process ended while we looked.
    }
  }
  return out;
}

/** The workerd child of this Node process (the first, when there are several). */
export function workerdPid(): number | null {
  return workerdPids()[0] ?? null;
}

/** user and system CPU of `pid` so far, in ms (clock ticks are 10 ms on Linux). */
function cpuMs(pid: number): { user: number; system: number } {
  const fields = (readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1] ?? "").split(" ");
  return { user: Number(fields[11]) * 10, system: Number(fields[12]) * 10 };
}

export interface CpuPerRun {
  /** ms of workerd CPU (user + system) per run */
  total: number;
  user: number;
  system: number;
  runs: number;
  /** ms per run in each round, in round order. */
  rounds: number[];
}

export async function cpuPerRun(
  pid: number,
  runners: ReadonlyArray<readonly [string, Runner]>,
  rounds: number,
  perBlock: number,
  settleMs: number,
): Promise<Map<string, CpuPerRun>> {
  const pause = () => new Promise((r) => setTimeout(r, settleMs));
  const acc = new Map(runners.map(([k]) => [k, { user: 0, system: 0, runs: 0, rounds: [] as number[] }]));
  // What the warm-up left behind is done before anything is counted.
  await pause();
  for (let r = 0; r < rounds; r++) {
    // Idle: two settle pauses, nothing run (the pause after the last block made it quiet).
    const idleFrom = cpuMs(pid);
    const idleT0 = performance.now();
    await pause();
    await pause();
    const idleTo = cpuMs(pid);
    const idleMs = performance.now() - idleT0;
    const idle = {
      user: (idleTo.user - idleFrom.user) / idleMs,
      system: (idleTo.system - idleFrom.system) / idleMs,
    };
    // Every other round in reverse order, so what drifts over the phase weighs on all alike.
    for (const [key, run] of r % 2 === 0 ? runners : [...runners].reverse()) {
      const before = cpuMs(pid);
      const t0 = performance.now();
      for (let i = 0; i < perBlock; i++) await run();
      await pause();
      const after = cpuMs(pid);
      const elapsed = performance.now() - t0;
      const a = acc.get(key);
      if (!a) continue;
      const user = after.user - before.user - idle.user * elapsed;
      const system = after.system - before.system - idle.system * elapsed;
      a.user += user;
      a.system += system;
      a.runs += perBlock;
      a.rounds.push((user + system) / perBlock);
    }
  }
  return new Map(
    [...acc].map(([k, a]) => [
      k,
      {
        total: (a.user + a.system) / a.runs,
        user: a.user / a.runs,
        system: a.system / a.runs,
        runs: a.runs,
        rounds: a.rounds,
      },
    ]),
  );
}

/** Each round's ratio of `of` to `to` (their figures of the same round), lowest to highest. */
export function roundRatios(of: CpuPerRun | undefined, to: CpuPerRun | undefined): number[] {
  if (!of || !to) return [];
  return of.rounds.map((v, i) => v / (to.rounds[i] ?? Number.NaN)).sort((a, b) => a - b);
}
