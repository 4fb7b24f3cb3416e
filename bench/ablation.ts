/**
 * What the gap between ours and the bare floor is made of: each part of a run switched off in
 * turn (bench only: production always has all of them), and the bare Durable Object with one
 * part of ours added at a time. Latency series interleaved, CPU per run (workerd user + system
 * from /proc) in alternating blocks, as in the main table. Used by `npm run bench` (a section of
 * bench/results.md) and `npm run bench:ablate` (the table alone).
 */
import { LISTING_GUARD_MS } from "../src/run/lifecycle/run-plan.ts";
import { cpuPerRun } from "./cpu.ts";
import { baselineRunner, interleaved, oursRunner, type Runner } from "./latency.ts";

export interface AblationVariant {
  key: string;
  what: string;
  run: Runner;
}

/** The fixed cost of a request on the server: GET /health, interleaved with the variants. */
const HEALTH = "GET /health";

export function ablationVariants(base: string, steps: number): AblationVariant[] {
  const bare = (extra: string) => baselineRunner(base, "bare", steps, extra);
  const health: Runner = async () => {
    const res = await fetch(`${base}/health`);
    if (!res.ok) throw new Error(`/health answered ${res.status}`);
    await res.arrayBuffer();
  };
  return [
    { key: HEALTH, what: "the fixed HTTP cost, subtracted for the net column", run: health },
    { key: "ours", what: "the real app and run object, listing on", run: oursRunner(base, steps) },
    {
      key: "ours, listing off",
      what: "the same, without the listing write",
      run: oursRunner(base, steps, undefined, "/bench/unlisted"),
    },
    {
      key: "ours, listing and alarm off",
      what: "setAlarm/deleteAlarm are no-ops (no deadline, no listing retry)",
      run: oursRunner(base, steps, undefined, "/bench/v/NOALARM"),
    },
    {
      key: "ours, listing and log line off",
      what: "no run.finished line",
      run: oursRunner(base, steps, undefined, "/bench/v/NOLOG"),
    },
    { key: "bare DO", what: "CREATE TABLE + one INSERT per step (the floor)", run: bare("") },
    {
      key: "bare DO + alarm",
      what: "a deadline alarm set at start, deleted after answering",
      run: bare("alarm"),
    },
    {
      key: "bare DO + alarm late",
      what: "set after answering (not safe: shows what the answer waits for)",
      run: bare("alarmlate"),
    },
    { key: "bare DO + log line", what: "one console.log line after answering", run: bare("log") },
    { key: "bare DO + KV rows", what: "each step stored with the KV API, as ours does", run: bare("kv") },
    {
      key: "bare DO + alarm + KV rows",
      what: "the floor of a run stored like ours that keeps a deadline",
      run: bare("alarm,kv"),
    },
    {
      key: "bare DO + guard alarm",
      what: `an alarm armed with the last write, ${LISTING_GUARD_MS / 1000} s away, that fires once (as ours' guard)`,
      run: bare("guard"),
    },
    {
      key: "bare DO + all ours must do",
      what: "KV rows, a log line, the listing write after answering (no guard: a run that ends before its answer arms none)",
      run: bare("kv,log,listing"),
    },
  ];
}

export interface AblationRow {
  key: string;
  what: string;
  p50: number;
  /** p50 net of the /health p50 of the same series (null for /health itself) */
  net: number | null;
  /** workerd ms per run (user + system), null without /proc */
  cpu: number | null;
}

export async function runAblation(
  variants: AblationVariant[],
  pid: number | null,
  o: { samples: number; cpuRounds: number; cpuBlock: number; settleMs: number },
): Promise<AblationRow[]> {
  const runners = variants.map((v) => [v.key, v.run] as const);
  const lat = await interleaved(runners, 5, o.samples);
  const work = runners.filter(([key]) => key !== HEALTH);
  const cpu = pid === null ? null : await cpuPerRun(pid, work, o.cpuRounds, o.cpuBlock, o.settleMs);
  const health = lat.get(HEALTH)?.p50 ?? Number.NaN;
  return variants
    .filter((v) => v.key !== HEALTH)
    .map((v) => {
      const p50 = lat.get(v.key)?.p50 ?? Number.NaN;
      return { key: v.key, what: v.what, p50, net: p50 - health, cpu: cpu?.get(v.key)?.total ?? null };
    });
}

/** A markdown table: p50 and CPU per run, each also as a ratio to the bare floor. */
export function renderAblation(rows: AblationRow[]): string {
  const bare = rows.find((r) => r.key === "bare DO");
  const ratio = (a: number | null, b: number | null | undefined) =>
    a === null || !b ? "—" : `${(a / b).toFixed(2)}x`;
  const cells = [
    ["variant", "what changes", "p50", "/ bare", "p50 net of /health", "/ bare net", "CPU per run", "/ bare"],
    ...rows.map((r) => [
      r.key,
      r.what,
      `${r.p50.toFixed(2)} ms`,
      ratio(r.p50, bare?.p50),
      r.net === null ? "—" : `${r.net.toFixed(2)} ms`,
      ratio(r.net, bare?.net),
      r.cpu === null ? "—" : `${r.cpu.toFixed(2)} ms`,
      ratio(r.cpu, bare?.cpu),
    ]),
  ];
  const widths = (cells[0] ?? []).map((_, i) => Math.max(...cells.map((c) => (c[i] ?? "").length)));
  const line = (c: string[]) => `| ${c.map((x, i) => x.padEnd(widths[i] ?? 0)).join(" | ")} |`;
  return [line(cells[0] ?? []), line(widths.map((w) => "-".repeat(w))), ...cells.slice(1).map(line)].join(
    "\n",
  );
}
