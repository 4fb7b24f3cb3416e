/**
 * The bench Worker served by `wrangler dev`, as `npm start` serves ours (its proxy Worker in front,
 * its output read and dropped as a terminal shows it): bench:paths compares both paths, and `npm
 * run bench` reports the 10-step run against the bare DO through it.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { join } from "node:path";
import { freePort, ROOT, WRANGLER_ENV } from "./dev-server.ts";
import { baselineRunner, interleaved, oursRunner, type Runner } from "./latency.ts";

/** `wrangler dev` on the bench Worker (bench/wrangler.bench.toml), storage under `tmp`. */
export async function startWranglerDev(tmp: string): Promise<{ url: string; stop(): Promise<void> }> {
  const port = await freePort();
  const args = [
    join(ROOT, "node_modules/wrangler/bin/wrangler.js"),
    "dev",
    "--config",
    join(ROOT, "bench/wrangler.bench.toml"),
    "--ip",
    "127.0.0.1",
    "--port",
    String(port),
    "--inspector-port",
    String(await freePort()),
    "--persist-to",
    join(tmp, "wrangler-state"),
    "--show-interactive-dev-session=false",
  ];
  const child: ChildProcess = spawn(process.execPath, args, {
    cwd: ROOT,
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
    env: WRANGLER_ENV,
  });
  // Read (and drop) what it prints, as a terminal would: a full pipe would stall it.
  child.stdout?.on("data", () => {});
  child.stderr?.on("data", () => {});
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 600; i++) {
    const ok = await fetch(`${url}/health`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url,
    stop: async () => {
      if (child.pid !== undefined && child.exitCode === null) {
        process.kill(-child.pid, "SIGTERM");
        await new Promise((r) => child.once("exit", r));
      }
    },
  };
}

/** `GET /health` as a runner: the fixed cost of a request on that server. */
export function healthRunner(base: string): Runner {
  return async () => {
    await (await fetch(`${base}/health`)).text();
  };
}

/** The 10-step run of ours and of the bare DO through `wrangler dev`, interleaved with /health: p50s. */
export async function throughWranglerDev(
  tmp: string,
  samples: number,
  warmup = 30,
): Promise<{ health: number; ours: number; bare: number }> {
  const dev = await startWranglerDev(tmp);
  try {
    const s = await interleaved(
      [
        ["health", healthRunner(dev.url)],
        ["ours", oursRunner(dev.url, 10)],
        ["bare", baselineRunner(dev.url, "bare", 10)],
      ],
      warmup,
      samples,
    );
    const p = (k: string) => s.get(k)?.p50 ?? Number.NaN;
    return { health: p("health"), ours: p("ours"), bare: p("bare") };
  } finally {
    await dev.stop();
  }
}
