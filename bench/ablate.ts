/**
 * `npm run bench:ablate`: what each part of a run costs, found by switching one off at a time
 * (bench only: production always has all of them), next to the bare Durable Object floor with
 * one part of ours added at a time. Same Worker and workerd as `npm run bench`; latency series
 * interleaved, CPU per run (workerd user + system from /proc) in alternating blocks. Prints one
 * table; writes nothing. About two minutes.
 *
 *   ours            the real app and run object, listing on
 *   unlisted        the same, listing write off
 *   noalarm         listing off, and setAlarm/deleteAlarm are no-ops (no deadline alarm)
 *   nolog           listing off, and no run.finished log line
 *   bare            one Durable Object per run, CREATE TABLE + one INSERT per step (the floor)
 *   bare+alarm      the floor plus a deadline alarm set at start and deleted after answering
 *   bare+log        the floor plus one console.log line after answering
 *   bare+kv         the floor storing each step with the KV API (as ours does) instead of SQL
 *   bare+alarm+kv   both: the floor of a run that is stored like ours and keeps a deadline
 *
 *   VARIANTS=ours,bare npm run bench:ablate   only these; STEPS=50; SAMPLES=200; TP=1 adds
 *                                             throughput at 16 clients
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { cpuPerRun } from "./cpu.ts";
import { ROOT, startBenchServer } from "./dev-server.ts";
import { baselineRunner, concurrentRounds, interleaved, oursRunner, type Runner } from "./latency.ts";
import { buildBenchBundle } from "./pipelines.ts";

const steps = Number(process.env.STEPS ?? 10);
const samples = Number(process.env.SAMPLES ?? 100);
const tmp = join(ROOT, "bench/tmp");
mkdirSync(tmp, { recursive: true });
buildBenchBundle(tmp);
const server = await startBenchServer(tmp);
try {
  const base = server.url;
  const all: Array<readonly [string, Runner]> = [
    ["ours", oursRunner(base, steps)],
    ["unlisted", oursRunner(base, steps, undefined, "/bench/unlisted")],
    ["noalarm", oursRunner(base, steps, undefined, "/bench/v/NOALARM")],
    ["nolog", oursRunner(base, steps, undefined, "/bench/v/NOLOG")],
    ["bare", baselineRunner(base, "bare", steps)],
    ["bare+alarm", baselineRunner(base, "bare", steps, "alarm")],
    ["bare+log", baselineRunner(base, "bare", steps, "log")],
    ["bare+kv", baselineRunner(base, "bare", steps, "kv")],
    ["bare+alarm+kv", baselineRunner(base, "bare", steps, "alarm,kv")],
  ];
  const only = process.env.VARIANTS?.split(",");
  const runners = only ? all.filter(([k]) => only.includes(k)) : all;
  const lat = await interleaved(runners, 10, samples);
  const cpu = server.pid === null ? null : await cpuPerRun(server.pid, runners, 3, 40, 2500);
  const tp = process.env.TP ? await concurrentRounds(runners, 16, 2, 2, 2500) : null;
  const bare = lat.get("bare")?.p50 ?? Number.NaN;
  const bareCpu = cpu?.get("bare")?.total ?? Number.NaN;
  const bareTp = tp?.get("bare")?.runsPerSecond ?? Number.NaN;
  console.log(`${steps} steps, ${samples} samples each`);
  console.log("variant        p50 ms  x bare   cpu ms/run  x bare  runs/s@16  x bare");
  for (const [k] of runners) {
    const s = lat.get(k);
    const c = cpu?.get(k);
    const t = tp?.get(k);
    console.log(
      `${k.padEnd(14)} ${s?.p50.toFixed(2).padStart(6)}  ${((s?.p50 ?? 0) / bare).toFixed(2).padStart(5)}x  ${c?.total.toFixed(2).padStart(10)}  ${((c?.total ?? 0) / bareCpu).toFixed(2).padStart(5)}x  ${t ? t.runsPerSecond.toFixed(0).padStart(9) : "        -"}  ${t ? `${(t.runsPerSecond / bareTp).toFixed(2)}x` : ""}`,
    );
  }
} finally {
  await server.stop();
}
