/**
 * `npm run start:queues [-- wrangler dev flags]`: `npm start` plus a producer Worker for the local
 * queues (docs/triggers.md, "Queues"). It is the same Worker as under `npm start` — it serves the
 * port, takes `--var`, answers `/cdn-cgi/local/scheduled` and keeps its state in the same
 * `.wrangler/state` — run by `wrangler dev` with a second config for `dev/producer.toml`. Only the
 * first Worker of a `wrangler dev` session serves a port, so this one reaches the producer through
 * a service binding, `QUEUE_PRODUCER`, that exists only here: the config it runs is wrangler.toml
 * plus that binding, written to `.wrangler-queues.toml` (git-ignored) beside it so that every path
 * in it means what it means in wrangler.toml. The Worker hands `/queues/...` to that binding
 * (src/app.ts); deployed, the binding does not exist and the path is a 404.
 */
import { spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const config = `${root}.wrangler-queues.toml`;
writeFileSync(
  config,
  `# Written by \`npm run start:queues\` (scripts/start-queues.ts): wrangler.toml plus the producer's binding.\n${readFileSync(`${root}wrangler.toml`, "utf8")}\n[[services]]\nbinding = "QUEUE_PRODUCER"\nservice = "workflow-edge-producer"\n`,
);
const child = spawn(
  "npx",
  ["wrangler", "dev", "-c", config, "-c", "dev/producer.toml", ...process.argv.slice(2)],
  { cwd: root, stdio: "inherit", env: { ...process.env, WORKFLOW_EDGE_DEV: "1" } },
);
for (const signal of ["SIGINT", "SIGTERM"] as const) process.on(signal, () => child.kill(signal));
child.on("exit", (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
