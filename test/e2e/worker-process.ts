/**
 * Runs the real Worker for the browser test: `wrangler dev` on 127.0.0.1 and a free port, serving
 * a bundle compiled from test/e2e/workflows (so the test neither needs workflows/ nor touches
 * src/generated). The config is the project's wrangler.toml with three changes, written to a
 * temporary directory: no `[build]` command, absolute `main`, and the bundle alias pointing at
 * the e2e bundle. Local state lives in the same temporary directory. The process runs in its own
 * process group so stopping it by its PID also stops workerd.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve as resolvePath } from "node:path";
import { fileURLToPath } from "node:url";
import { writeGeneratedSources } from "../../scripts/generated-sources.ts";
import { compileProject } from "../../src/compiler/index.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

export interface WorkerProcess {
  /** `http://127.0.0.1:<port>` */
  url: string;
  /** What wrangler printed so far (for failure messages). */
  output(): string;
  stop(): Promise<void>;
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** The project's wrangler.toml, made to serve `bundlePath` without running the build. */
export function e2eWranglerConfig(projectToml: string, bundlePath: string): string {
  const lines = projectToml.split("\n");
  const out: string[] = [];
  let inBuild = false;
  for (const line of lines) {
    const table = /^\s*\[+([^\]]+)\]+\s*$/.exec(line);
    if (table) inBuild = table[1]?.trim() === "build";
    if (inBuild) continue;
    if (/^main\s*=/.test(line)) out.push(`main = ${JSON.stringify(join(ROOT, "src/index.ts"))}`);
    else if (/^"workflow-bundle"\s*=/.test(line))
      out.push(`"workflow-bundle" = ${JSON.stringify(bundlePath)}`);
    else out.push(line);
  }
  return out.join("\n");
}

/**
 * `workflowsDir` (relative to the project, or absolute) defaults to test/e2e/workflows; `workflows` serves the
 * project's own examples, checked against the project's wrangler.toml like `npm start` does.
 */
export async function startWorker(
  vars: Record<string, string>,
  workflowsDir = "test/e2e/workflows",
): Promise<WorkerProcess> {
  // The Worker imports the viewer's bundled scripts, which `[build]` would write (removed here).
  await writeGeneratedSources(join(ROOT, "src/generated"));
  const dir = mkdtempSync(join(tmpdir(), "workflow-edge-e2e-"));
  const compiled = compileProject(resolvePath(ROOT, workflowsDir), {
    wranglerConfig: join(ROOT, "wrangler.toml"),
  });
  if (!compiled.bundle) {
    throw new Error(`e2e workflows do not compile:\n${compiled.diagnostics.map((d) => d.text).join("\n")}`);
  }
  const bundlePath = join(dir, "bundle.json");
  // As `npm run build` writes it: with the time it was built (`GET /v1/models`' `created`).
  writeFileSync(bundlePath, JSON.stringify({ ...compiled.bundle, builtAt: new Date().toISOString() }));
  const configPath = join(dir, "wrangler.toml");
  writeFileSync(configPath, e2eWranglerConfig(readFileSync(join(ROOT, "wrangler.toml"), "utf8"), bundlePath));

  const port = await freePort();
  const inspectorPort = await freePort();
  const args = [
    join(ROOT, "node_modules/wrangler/bin/wrangler.js"),
    "dev",
    "--config",
    configPath,
    "--ip",
    "127.0.0.1",
    "--port",
    String(port),
    "--inspector-port",
    String(inspectorPort),
    "--persist-to",
    join(dir, "state"),
    "--show-interactive-dev-session=false",
    "--log-level",
    "warn",
    ...Object.entries(vars).flatMap(([k, v]) => ["--var", `${k}:${v}`]),
  ];
  // process.execPath is the Node 22 that vitest runs on (the `node` devDependency), as wrangler needs.
  const child: ChildProcess = spawn(process.execPath, args, {
    cwd: ROOT,
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
    // Nothing may reach the internet: no telemetry, no banner update check, no `Request.cf` download.
    env: {
      ...process.env,
      WRANGLER_SEND_METRICS: "false",
      WRANGLER_HIDE_BANNER: "true",
      CLOUDFLARE_CF_FETCH_ENABLED: "false",
      CI: "true",
      NO_COLOR: "1",
    },
  });
  let log = "";
  child.stdout?.on("data", (b: Buffer) => {
    log += b.toString();
  });
  child.stderr?.on("data", (b: Buffer) => {
    log += b.toString();
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  let running = true;
  void exited.then(() => {
    running = false;
  });

  const stop = async () => {
    if (running && child.pid !== undefined) {
      try {
        process.kill(-child.pid, "SIGTERM");
      } catch {
        // Already gone.
      }
      const timeout = new Promise<"timeout">((r) => setTimeout(() => r("timeout"), 5000));
      if ((await Promise.race([exited, timeout])) === "timeout") {
        try {
          process.kill(-child.pid, "SIGKILL");
        } catch {
          // Already gone.
        }
        await exited;
      }
    }
    rmSync(dir, { recursive: true, force: true });
  };

  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 90_000;
  for (;;) {
    if (!running) {
      await stop();
      throw new Error(`wrangler dev exited before serving:\n${log}`);
    }
    try {
      const res = await fetch(`${url}/health`);
      if (res.ok) break;
    } catch {
      // Not listening yet.
    }
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`wrangler dev did not answer /health within 90 s:\n${log}`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  return { url, output: () => log, stop };
}
