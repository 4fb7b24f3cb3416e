/**
 * Client side of the bench: the three ways to run an N-step pipeline over HTTP on the bench
 * Worker, each checked for the right answer (a fast wrong answer must not count), and the
 * samplers that time them from Node with `performance.now()` (one at a time, interleaved across
 * contenders, for latency; a fixed number of concurrent clients for throughput).
 */
import { BENCH_PARAMS, pipelineName } from "./pipelines.ts";

export type Runner = () => Promise<void>;

const BODY = JSON.stringify(BENCH_PARAMS);

interface ItemsOutput {
  result?: Array<{ n?: unknown }>;
}

function checkItems(output: ItemsOutput | null | undefined, steps: number, what: string): void {
  const items = output?.result;
  if (
    !Array.isArray(items) ||
    items.length !== BENCH_PARAMS.items.length ||
    items.some((i) => i.n !== steps)
  ) {
    throw new Error(`${what}: wrong output ${JSON.stringify(output)}`);
  }
}

/**
 * Ours: `POST /invoke/bench-N` with `Prefer: wait=30`; the run must come back complete. `prefix`
 * `/bench/unlisted` serves the same app with the run listing switched off (bench/entry.ts).
 */
export function oursRunner(
  base: string,
  steps: number,
  onRun?: (runId: string) => void,
  prefix = "",
  name = pipelineName(steps),
): Runner {
  const url = `${base}${prefix}/invoke/${name}`;
  return async () => {
    const res = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", prefer: "wait=30" },
      body: BODY,
    });
    const env = (await res.json()) as { status?: string; run_id?: string; output?: ItemsOutput };
    if (res.status !== 200 || env.status !== "complete") {
      throw new Error(`ours ${steps} steps: HTTP ${res.status} ${JSON.stringify(env).slice(0, 300)}`);
    }
    checkItems(env.output, steps, `ours ${steps} steps`);
    if (onRun && env.run_id) onRun(env.run_id);
  };
}

/** How often the Workflows route polls `instance.status()`; it bounds what polling adds. */
export const WORKFLOW_POLL_MS = 1;

/** The bare Durable Object baseline or Cloudflare Workflows, through the bench routes. */
export function baselineRunner(base: string, kind: "bare" | "workflows", steps: number, extra = ""): Runner {
  const poll = kind === "workflows" ? `&poll_ms=${WORKFLOW_POLL_MS}` : "";
  const url = `${base}/bench/${kind}?steps=${steps}${poll}${extra ? `&with=${extra}` : ""}`;
  return async () => {
    const res = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: BODY,
    });
    const out = (await res.json()) as ItemsOutput & { output?: ItemsOutput };
    if (res.status !== 200)
      throw new Error(`${kind} ${steps} steps: HTTP ${res.status} ${JSON.stringify(out)}`);
    checkItems(kind === "workflows" ? out.output : out, steps, `${kind} ${steps} steps`);
  };
}

export interface Samples {
  ms: number[];
  p50: number;
  p99: number;
  mean: number;
}

/** Nearest-rank percentile of sorted samples. */
export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1] ?? Number.NaN;
}

/** The median (the lower one of an even count): the 50th nearest-rank percentile. */
export function median(xs: number[]): number {
  return percentile(
    [...xs].sort((a, b) => a - b),
    50,
  );
}

export function summarize(ms: number[]): Samples {
  const sorted = [...ms].sort((a, b) => a - b);
  const mean = ms.reduce((a, b) => a + b, 0) / Math.max(1, ms.length);
  return { ms: sorted, p50: percentile(sorted, 50), p99: percentile(sorted, 99), mean };
}

/**
 * Round-robin over `runners`: every round runs each once (starting one further each round), so
 * drift on a shared machine lands on all of them alike and their ratios stay honest.
 */
export async function interleaved(
  runners: ReadonlyArray<readonly [string, Runner]>,
  warmup: number,
  n: number,
): Promise<Map<string, Samples>> {
  for (let i = 0; i < warmup; i++) for (const [, run] of runners) await run();
  const ms = new Map<string, number[]>(runners.map(([k]) => [k, []]));
  for (let i = 0; i < n; i++) {
    for (let j = 0; j < runners.length; j++) {
      const [key, run] = runners[(i + j) % runners.length] as readonly [string, Runner];
      const t0 = performance.now();
      await run();
      ms.get(key)?.push(performance.now() - t0);
    }
  }
  return new Map([...ms].map(([k, v]) => [k, summarize(v)]));
}

export interface Throughput {
  runsPerSecond: number;
  runs: number;
  seconds: number;
  latency: Samples;
}

/** `concurrency` clients, each starting its next run when the last one answers, for `seconds`. */
export async function concurrent(run: Runner, concurrency: number, seconds: number): Promise<Throughput> {
  const ms: number[] = [];
  const t0 = performance.now();
  const end = t0 + seconds * 1000;
  const client = async () => {
    while (performance.now() < end) {
      const s = performance.now();
      await run();
      ms.push(performance.now() - s);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, client));
  const elapsed = (performance.now() - t0) / 1000;
  return { runsPerSecond: ms.length / elapsed, runs: ms.length, seconds: elapsed, latency: summarize(ms) };
}

/**
 * `concurrent` for each runner in turn, `rounds` times, so that drift is shared; results pooled.
 * `settleMs` of quiet end every round, so that work a contender leaves behind (a run's alarm a
 * few seconds later) lands in the next contender's window only within a round (order them so
 * that this is fair) and never in the next round's first.
 */
export async function concurrentRounds(
  runners: ReadonlyArray<readonly [string, Runner]>,
  concurrency: number,
  secondsPerRound: number,
  rounds: number,
  settleMs = 0,
): Promise<Map<string, Throughput>> {
  const pooled = new Map<string, { ms: number[]; seconds: number }>(
    runners.map(([k]) => [k, { ms: [], seconds: 0 }]),
  );
  for (let r = 0; r < rounds; r++) {
    for (const [key, run] of runners) {
      const t = await concurrent(run, concurrency, secondsPerRound);
      const p = pooled.get(key);
      if (p) {
        p.ms.push(...t.latency.ms);
        p.seconds += t.seconds;
      }
    }
    await new Promise((r) => setTimeout(r, settleMs));
  }
  return new Map(
    [...pooled].map(([k, p]) => [
      k,
      {
        runsPerSecond: p.ms.length / p.seconds,
        runs: p.ms.length,
        seconds: p.seconds,
        latency: summarize(p.ms),
      },
    ]),
  );
}
