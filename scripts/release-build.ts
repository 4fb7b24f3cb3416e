/**
 * A release's Worker, built as `wrangler deploy` would build it, for the upgrade test
 * (test/e2e/upgrade.e2e.test.ts, docs/operations.md "Upgrades"): the source tree at `root` (this
 * checkout, or a checkout of an earlier release) with `workflows` compiled by that tree's own
 * compiler, bundled by `wrangler deploy --dry-run` with that tree's wrangler.toml. What it
 * returns is what Miniflare needs to serve it: the script, and the Durable Object classes the
 * release's wrangler.toml binds.
 */
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { parse } from "smol-toml";
import { bundleWorker } from "../bench/dev-server.ts";

export interface ReleaseBuild {
  scriptPath: string;
  /** Binding name -> class name, as the release's wrangler.toml binds them. */
  durableObjects: Record<string, string>;
}

interface CompileModule {
  compileProject(
    dir: string,
    o: { wranglerConfig: string },
  ): { bundle: unknown | null; diagnostics: Array<{ text: string; severity?: string }> };
}

/**
 * Builds the Worker of the tree at `root` serving `workflows`, into `out` (emptied first).
 * `extraToml`: lines appended to the release's wrangler.toml (the chaos run's queue consumers).
 */
export async function buildRelease(
  root: string,
  workflows: string,
  out: string,
  extraToml = "",
): Promise<ReleaseBuild> {
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  const toml = join(out, "release.wrangler.toml");
  writeFileSync(toml, `${readFileSync(join(root, "wrangler.toml"), "utf8")}\n${extraToml}\n`);
  const compiler = (await import(pathToFileURL(join(root, "src/compiler/index.ts")).href)) as CompileModule;
  const compiled = compiler.compileProject(resolve(workflows), { wranglerConfig: toml });
  if (!compiled.bundle)
    throw new Error(`${workflows} does not compile:\n${compiled.diagnostics.map((d) => d.text).join("\n")}`);
  const bundlePath = join(out, "bundle.json");
  writeFileSync(bundlePath, JSON.stringify(compiled.bundle));
  // The Worker imports what that tree's build writes into src/generated/ (a release before the
  // vendored MIME parser wrote only the viewer's scripts).
  if (existsSync(join(root, "scripts/generated-sources.ts"))) {
    const generated = (await import(pathToFileURL(join(root, "scripts/generated-sources.ts")).href)) as {
      writeGeneratedSources(dir: string): Promise<void>;
    };
    await generated.writeGeneratedSources(join(root, "src/generated"));
  } else {
    const viewer = (await import(pathToFileURL(join(root, "scripts/viewer-scripts.ts")).href)) as {
      bundleViewerScripts(out: string): Promise<void>;
    };
    await viewer.bundleViewerScripts(join(root, "src/generated/viewer-scripts.ts"));
  }
  const config = join(out, "wrangler.toml");
  writeFileSync(config, releaseConfig(readFileSync(toml, "utf8"), root, bundlePath));
  const { scriptPath } = bundleWorker(config, join(out, "dist"), "index.ts");
  const parsed = parse(readFileSync(toml, "utf8")) as {
    durable_objects?: { bindings?: Array<{ name: string; class_name: string }> };
  };
  const durableObjects: Record<string, string> = {};
  for (const b of parsed.durable_objects?.bindings ?? []) durableObjects[b.name] = b.class_name;
  return { scriptPath, durableObjects };
}

/** The release's wrangler.toml, made to bundle its own source with `bundlePath`, without its build step. */
function releaseConfig(toml: string, root: string, bundlePath: string): string {
  const out: string[] = [];
  let inBuild = false;
  for (const line of toml.split("\n")) {
    const table = /^\s*\[+([^\]]+)\]+\s*$/.exec(line);
    if (table) inBuild = table[1]?.trim() === "build";
    if (inBuild) continue;
    if (/^main\s*=/.test(line)) out.push(`main = ${JSON.stringify(join(root, "src/index.ts"))}`);
    else if (/^"workflow-bundle"\s*=/.test(line))
      out.push(`"workflow-bundle" = ${JSON.stringify(bundlePath)}`);
    else out.push(line);
  }
  return out.join("\n");
}
