/**
 * A bench phase with workflows of its own (npm run bench:fanout, bench:compensation,
 * bench:streaming): its files compiled with our compiler into `tmp/bundle.json`, and
 * bench/wrangler.bench.toml pointed at that bundle, for `bundleWorker` (bench/dev-server.ts).
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { compileProject } from "../src/compiler/index.ts";
import { ROOT } from "./dev-server.ts";

/** Writes `files` (name → YAML) into `tmp/workflows`, compiles them, and returns the config to bundle with. */
export function ownBundleConfig(tmp: string, files: Record<string, string>): string {
  const wfDir = join(tmp, "workflows");
  rmSync(wfDir, { recursive: true, force: true });
  mkdirSync(wfDir, { recursive: true });
  for (const [name, text] of Object.entries(files)) writeFileSync(join(wfDir, name), text);
  const result = compileProject(wfDir);
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
