/**
 * What a deploy of a real project weighs and how long workerd takes to start it: 50 workflow files
 * (copies of the examples in workflows/ under new names, with their gateway, agent and
 * sub-workflow), compiled with our compiler, bundled by `wrangler deploy --dry-run` exactly as a
 * deploy would, gzipped with node:zlib. Startup is timed on that same output in a fresh workerd
 * (Miniflare), against an empty Worker started the same way, so the difference is the cost of
 * loading and evaluating our module.
 */
import { cpSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { parse } from "smol-toml";
import { compileProject } from "../src/compiler/index.ts";
import { bundleWorker, newMiniflare, ROOT } from "./dev-server.ts";
import { percentile } from "./latency.ts";

export const WORKFLOW_COUNT = 50;

/** Copies workflows/ and replaces its root files by `count` renamed copies of them. */
export function writeManyWorkflows(dir: string, count: number): void {
  const src = join(ROOT, "workflows");
  rmSync(dir, { recursive: true, force: true });
  cpSync(src, dir, { recursive: true });
  const roots = readdirSync(src)
    .filter((f) => f.endsWith(".workflow.yaml"))
    .sort();
  for (const f of roots) rmSync(join(dir, f));
  // Test files name the originals; they never reach a bundle anyway.
  rmSync(join(dir, "tests"), { recursive: true, force: true });
  for (let k = 1; k <= count; k++) {
    const file = roots[(k - 1) % roots.length] as string;
    const text = readFileSync(join(src, file), "utf8");
    const base = file.replace(/\.workflow\.yaml$/, "");
    let renamed = text
      .replace(/^name:\s*(\S+)\s*$/m, (_, name: string) => `name: ${name}-${k}`)
      .replace(/^description:\s*(.*)$/m, (_, d: string) => `description: ${d} (copy ${k})`);
    if (k > roots.length) {
      // A queue and an email address start one workflow each (the build says so): the second and
      // later copies of a file keep neither its queue nor its addresses.
      renamed = renamed
        .replace(/^ {2}queue:.*\n/m, "")
        .replace(/(email:\n\s+to:\s*)\[[^\]]*\]/, (_, head: string) => `${head}["copy-${k}@example.com"]`);
    }
    writeFileSync(join(dir, `${base}-${k}.workflow.yaml`), renamed);
  }
}

export interface BundleSize {
  workflows: number;
  bundleJsonBytes: number;
  scriptBytes: number;
  gzipBytes: number;
  /** What wrangler itself reported ("Total Upload: … / gzip: …"), for cross-checking. */
  wranglerSays: string;
  scriptPath: string;
}

function deployConfig(bundlePath: string): string {
  // Built as the project deploys it: its own minify and keep_names settings.
  const project = parse(readFileSync(join(ROOT, "wrangler.toml"), "utf8")) as {
    minify?: boolean;
    keep_names?: boolean;
  };
  return [
    'name = "workflow-edge"',
    `main = ${JSON.stringify(join(ROOT, "src/index.ts"))}`,
    'compatibility_date = "2026-10-20"',
    'compatibility_flags = ["nodejs_compat"]',
    `keep_names = ${project.keep_names ?? true}`,
    `minify = ${project.minify ?? false}`,
    "[[durable_objects.bindings]]",
    'name = "RUNS"',
    'class_name = "RunObject"',
    "[[durable_objects.bindings]]",
    'name = "RUN_INDEX"',
    'class_name = "RunIndex"',
    "[[migrations]]",
    'tag = "v1"',
    'new_sqlite_classes = ["RunObject", "RunIndex"]',
    "[alias]",
    `"workflow-bundle" = ${JSON.stringify(bundlePath)}`,
    "",
  ].join("\n");
}

/** Compiles `count` workflows in `tmp`, bundles the Worker with them, measures the result. */
export function measureBundleSize(tmp: string, count = WORKFLOW_COUNT): BundleSize {
  const wfDir = join(tmp, "workflows");
  writeManyWorkflows(wfDir, count);
  // The examples' schedules and rate limits are checked against the project's wrangler.toml.
  const result = compileProject(wfDir, { wranglerConfig: join(ROOT, "wrangler.toml") });
  if (!result.bundle) {
    const errors = result.diagnostics.filter((d) => d.severity === "error").map((d) => d.text);
    throw new Error(`the ${count} generated workflows do not compile:\n${errors.join("\n")}`);
  }
  const bundlePath = join(tmp, "bundle.json");
  // As `npm run build` writes it.
  writeFileSync(bundlePath, `${JSON.stringify(result.bundle, null, 2)}\n`);
  const config = join(tmp, "wrangler.toml");
  writeFileSync(config, deployConfig(bundlePath));
  const { scriptPath, output } = bundleWorker(config, join(tmp, "out"), "index.ts");
  const script = readFileSync(scriptPath);
  return {
    workflows: Object.keys(result.bundle.invocable).length,
    bundleJsonBytes: readFileSync(bundlePath).length,
    scriptBytes: script.length,
    gzipBytes: gzipSync(script).length,
    wranglerSays: /Total Upload:[^\n]*/.exec(output)?.[0] ?? "",
    scriptPath,
  };
}

export interface Startup {
  /** Median ms from `new Miniflare()` to the first /health answer, for our Worker. */
  oursMs: number;
  /** The same for an empty Worker: workerd spawn, config, socket, one request. */
  emptyMs: number;
  samples: number;
}

async function timeStart(opts: Record<string, unknown>): Promise<number> {
  const t0 = performance.now();
  const mf = await newMiniflare(opts);
  try {
    await mf.ready;
    const res = await mf.dispatchFetch("http://127.0.0.1/health");
    const body = await res.text();
    if (res.status !== 200) throw new Error(`startup probe: HTTP ${res.status} ${body}`);
    return performance.now() - t0;
  } finally {
    await mf.dispose();
  }
}

/**
 * Our bundled Worker (as deployed) and an empty Worker, each started `samples` times in a fresh
 * workerd, alternating so that drift on the machine hits both alike.
 */
export async function measureStartup(scriptPath: string, tmp: string, samples = 5): Promise<Startup> {
  const emptyPath = join(tmp, "empty-worker.js");
  // Same bindings and Durable Object classes as ours, so only the module's own weight differs.
  writeFileSync(
    emptyPath,
    [
      'import { DurableObject } from "cloudflare:workers";',
      "export class RunObject extends DurableObject {}",
      "export class RunIndex extends DurableObject {}",
      'export default { fetch() { return Response.json({ status: "ok" }); } };',
      "",
    ].join("\n"),
  );
  const shared = {
    durableObjects: {
      RUNS: { className: "RunObject", useSQLite: true },
      RUN_INDEX: { className: "RunIndex", useSQLite: true },
    },
    bindings: { RUN_RETENTION_S: "604800", ALLOW_PRIVATE_WEBHOOKS: "false" },
  };
  const ours: number[] = [];
  const empty: number[] = [];
  for (let i = 0; i < samples; i++) {
    ours.push(await timeStart({ ...shared, scriptPath }));
    empty.push(await timeStart({ ...shared, scriptPath: emptyPath }));
  }
  const med = (a: number[]) =>
    percentile(
      [...a].sort((x, y) => x - y),
      50,
    );
  return { oursMs: med(ours), emptyMs: med(empty), samples };
}
