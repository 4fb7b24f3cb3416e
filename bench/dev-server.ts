/**
 * Starts and stops the local workerd the bench measures. The bench Worker is bundled by
 * `wrangler deploy --dry-run` from bench/wrangler.bench.toml (so the alias, the entry and the
 * bindings are what the config says), then served by Miniflare (workerd plus the glue `wrangler
 * dev` uses) on a free port of 127.0.0.1, with Durable Object and Workflows storage on disk.
 *
 * Why not `wrangler dev` itself: it puts a proxy Worker in a second workerd in front of yours,
 * which adds about 4 ms to every request on a small machine, the same for all three contenders,
 * and would hide the differences the bench is for. Wrangler's network calls (update check,
 * `Request.cf`, telemetry) are off: the bench talks to 127.0.0.1 only.
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { cpus, totalmem } from "node:os";
import { basename, join } from "node:path";
import { writeGeneratedSources } from "../scripts/generated-sources.ts";
import { workerdPids } from "./cpu.ts";

export const ROOT = new URL("..", import.meta.url).pathname;

/** This machine in one line, for a results file's notes: CPUs, memory, Node. */
export function machineLine(): string {
  return `${cpus().length} × ${cpus()[0]?.model ?? "CPU"}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}`;
}

/**
 * Where a phase writes its results file: bench/ (committed), or `BENCH_RESULTS_DIR` when set (CI's
 * quick pass runs every phase to prove it works, and keeps the committed figures as they are).
 */
export function resultsPath(file: string): string {
  const dir = process.env.BENCH_RESULTS_DIR;
  return dir ? join(dir, file) : join(ROOT, "bench", file);
}
const WRANGLER = join(ROOT, "node_modules/wrangler/bin/wrangler.js");
export const COMPATIBILITY_DATE = "2026-10-20";

/** Environment for every wrangler call of the bench: quiet, offline, non-interactive. */
export const WRANGLER_ENV = {
  ...process.env,
  CI: "true",
  WRANGLER_SEND_METRICS: "false",
  WRANGLER_SEND_ERROR_REPORTS: "false",
  WRANGLER_HIDE_BANNER: "true",
  CLOUDFLARE_CF_FETCH_ENABLED: "false",
  NO_COLOR: "1",
};

/** Runs wrangler with Node 22 (process.execPath under `npm run`), waits for it, returns output. */
export function runWrangler(args: string[], cwd = ROOT): { status: number; output: string } {
  const r = spawnSync(process.execPath, [WRANGLER, ...args], { cwd, env: WRANGLER_ENV, encoding: "utf8" });
  return { status: r.status ?? 1, output: `${r.stdout ?? ""}${r.stderr ?? ""}` };
}

/** `wrangler deploy --dry-run`: the deployable script of `config`, written under `outdir`. */
export function bundleWorker(
  config: string,
  outdir: string,
  main: string,
): { scriptPath: string; output: string } {
  rmSync(outdir, { recursive: true, force: true });
  mkdirSync(outdir, { recursive: true });
  const r = runWrangler(["deploy", "--dry-run", "--outdir", outdir, "-c", config]);
  if (r.status !== 0) throw new Error(`wrangler deploy --dry-run -c ${config} failed:\n${r.output}`);
  return { scriptPath: join(outdir, basename(main).replace(/\.ts$/, ".js")), output: r.output };
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address();
      const port = typeof addr === "object" && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

export interface MiniflareLike {
  ready: Promise<URL>;
  dispatchFetch(url: string): Promise<{ status: number; text(): Promise<string> }>;
  dispose(): Promise<void>;
}

interface MiniflareModule {
  Miniflare: new (opts: unknown) => MiniflareLike;
  convertV4MiniflareOptions(opts: Record<string, unknown>): unknown;
}

/** A Miniflare (comes with wrangler) on 127.0.0.1, port 0, no `Request.cf` fetch. */
export async function newMiniflare(worker: Record<string, unknown>): Promise<MiniflareLike> {
  const mod = (await import("miniflare")) as unknown as MiniflareModule;
  return new mod.Miniflare(
    // The familiar (v4) option shape, converted to what this Miniflare takes.
    mod.convertV4MiniflareOptions({
      host: "127.0.0.1",
      port: 0,
      cf: false,
      compatibilityDate: COMPATIBILITY_DATE,
      compatibilityFlags: ["nodejs_compat"],
      modules: true,
      ...worker,
    }),
  );
}

export interface BenchServer {
  url: string;
  /** The workerd process, for CPU time from /proc (null if it could not be found). */
  pid: number | null;
  /** Log lines the Worker wrote with `"event":"run.finished"` so far (one per finished run). */
  runLogLines(): number;
  /** workerd's DevTools inspector on 127.0.0.1, for the CPU profile. */
  inspectorPort: number;
  scriptPath: string;
  stop(): Promise<void>;
}

/**
 * The bench Worker (bench/entry.ts, bundled) with the bindings of bench/wrangler.bench.toml, and
 * `vars` besides (bench/traces.ts runs one with an OTLP endpoint beside one without). `stateDir`:
 * where its objects' storage goes (default `<tmp>/state`, or BENCH_STATE_DIR).
 */
export async function startBenchServer(
  tmp: string,
  vars: Record<string, string> = {},
  stateDir: string | null = null,
): Promise<BenchServer> {
  const before = workerdPids();
  // The Worker imports the viewer's bundled scripts (written by the build, which the bench skips).
  await writeGeneratedSources(join(ROOT, "src/generated"));
  const { scriptPath } = bundleWorker(
    join(ROOT, "bench/wrangler.bench.toml"),
    join(tmp, "bench-out"),
    "entry.ts",
  );
  const persist = stateDir ?? process.env.BENCH_STATE_DIR ?? join(tmp, "state");
  rmSync(persist, { recursive: true, force: true });
  const inspectorPort = await freePort();
  let logLines = 0;
  const mf = await newMiniflare({
    inspectorPort,
    scriptPath,
    resourcePersistencePath: persist,
    durableObjects: {
      RUNS: { className: "CountingRunObject", useSQLite: true },
      RUNS_UNLISTED: { className: "UnlistedRunObject", useSQLite: true },
      RUNS_NOALARM: { className: "NoAlarmRunObject", useSQLite: true },
      RUNS_NOLOG: { className: "NoLogRunObject", useSQLite: true },
      RUN_INDEX: { className: "CountingRunIndex", useSQLite: true },
      BARE_RUNS: { className: "BareRunObject", useSQLite: true },
      FLOW_KEYS: { className: "CountingFlowKey", useSQLite: true },
      SIGNAL_KEYS: { className: "SignalKey", useSQLite: true },
      DEFINITIONS: { className: "DefinitionStore", useSQLite: true },
    },
    workflows: { BENCH_WF: { name: "bench-workflow", className: "BenchWorkflow" } },
    bindings: { RUN_RETENTION_S: "604800", ALLOW_PRIVATE_WEBHOOKS: "false", ...vars },
    // Counted, not printed: every finished run logs one JSON line (src/run/object/run-log.ts).
    handleStructuredLogs: (log: { message?: string }) => {
      // Count occurrences: one message may carry several lines when workerd writes fast.
      const n = (log.message ?? "").split('"event":"run.finished"').length - 1;
      logLines += n;
      if (n === 0 && process.env.BENCH_DEBUG) process.stderr.write(`${log.message}\n`);
    },
  });
  const url = await readyOrDisposed(mf);
  let stopped = false;
  return {
    url: url.origin,
    pid: workerdPids().find((p) => !before.includes(p)) ?? null,
    runLogLines: () => logLines,
    inspectorPort,
    scriptPath,
    stop: async () => {
      if (stopped) return;
      stopped = true;
      await mf.dispose();
    },
  };
}

/** The URL a Miniflare serves once ready; one that fails to start is disposed of first. */
export async function readyOrDisposed(mf: { ready: Promise<URL>; dispose(): Promise<void> }): Promise<URL> {
  try {
    return await mf.ready;
  } catch (err) {
    await mf.dispose();
    throw err;
  }
}
