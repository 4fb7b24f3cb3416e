/**
 * A bench phase with workflows of its own (npm run bench:fanout, bench:compensation,
 * bench:streaming): its files compiled with our compiler into `tmp/bundle.json`,
 * bench/wrangler.bench.toml pointed at that bundle, and bench/entry.ts bundled and served by
 * Miniflare on fresh storage with the bindings the phase gives.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { compileProject } from "../src/compiler/index.ts";
import { bundleWorker, newMiniflare, ROOT } from "./dev-server.ts";

/**
 * Writes `files` (name → YAML) into `tmp/workflows`, compiles them, and returns the config to
 * bundle with. A `wrangler.toml` among them is what the build checks the workflows against (a
 * phase's queue consumers).
 */
export function ownBundleConfig(tmp: string, files: Record<string, string>): string {
  const wfDir = join(tmp, "workflows");
  rmSync(wfDir, { recursive: true, force: true });
  mkdirSync(wfDir, { recursive: true });
  for (const [name, text] of Object.entries(files)) writeFileSync(join(wfDir, name), text);
  const result = compileProject(wfDir, { wranglerConfig: join(wfDir, "wrangler.toml") });
  if (!result.bundle)
    throw new Error(
      `the bench workflows do not compile:\n${result.diagnostics.map((d) => d.text).join("\n")}`,
    );
  const bundlePath = join(tmp, "bundle.json");
  writeFileSync(bundlePath, JSON.stringify(result.bundle));
  const text = readFileSync(join(ROOT, "bench/wrangler.bench.toml"), "utf8")
    .replace(/^main\s*=.*$/m, `main = ${JSON.stringify(join(ROOT, "bench/entry.ts"))}`)
    .replace(/^"workflow-bundle"\s*=.*$/m, `"workflow-bundle" = ${JSON.stringify(bundlePath)}`);
  const config = join(tmp, "wrangler.toml");
  writeFileSync(config, text);
  return config;
}

/**
 * bench/entry.ts with `files` as its workflows, on a Miniflare of its own (fresh storage in
 * `tmp/state`); `extra` adds Worker options (a phase's queues).
 */
export async function startOwnWorker(
  tmp: string,
  files: Record<string, string>,
  bindings: Record<string, string>,
  extra: Record<string, unknown> = {},
) {
  const { scriptPath } = bundleWorker(ownBundleConfig(tmp, files), join(tmp, "out"), "entry.ts");
  const persist = join(tmp, "state");
  rmSync(persist, { recursive: true, force: true });
  return newMiniflare({
    scriptPath,
    resourcePersistencePath: persist,
    durableObjects: {
      RUNS: { className: "CountingRunObject", useSQLite: true },
      RUN_INDEX: { className: "CountingRunIndex", useSQLite: true },
      BARE_RUNS: { className: "BareRunObject", useSQLite: true },
      DEFINITIONS: { className: "DefinitionStore", useSQLite: true },
    },
    workflows: { BENCH_WF: { name: "bench-workflow", className: "BenchWorkflow" } },
    bindings: { RUN_RETENTION_S: "604800", ALLOW_PRIVATE_WEBHOOKS: "true", ...bindings },
    ...extra,
  });
}

/** The SQLite rows run `runId`'s object wrote (bench/entry.ts counts them), through the Worker at `base`. */
export async function rowsWritten(base: string, runId: string): Promise<number> {
  return ((await (await fetch(`${base}/bench/writes/${runId}`)).json()) as { rows: number }).rows;
}
