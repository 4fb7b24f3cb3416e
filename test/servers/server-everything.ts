/**
 * The official MCP reference server (`@modelcontextprotocol/server-everything`, a dev
 * dependency) in its Streamable HTTP mode on 127.0.0.1, for the tool tests: the MCP client is
 * checked against the real thing, not only against our own test server. Started as a child
 * process on a free port, stopped by its PID.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { freePort } from "../e2e/worker-process.ts";

const require = createRequire(import.meta.url);

export async function startServerEverything(): Promise<{ url: string; close(): Promise<void> }> {
  const pkg = require.resolve("@modelcontextprotocol/server-everything/package.json");
  const entry = join(dirname(pkg), "dist/index.js");
  const port = await freePort();
  const child: ChildProcess = spawn(process.execPath, [entry, "streamableHttp"], {
    env: { ...process.env, PORT: String(port) },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server-everything did not start:\n${output}`)), 30_000);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (/listening on port/i.test(output)) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout?.on("data", onData);
    child.stderr?.on("data", onData);
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`server-everything exited (${code}):\n${output}`));
    });
  });
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    close: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.pid === undefined) return resolve();
        child.once("exit", () => resolve());
        child.kill("SIGTERM");
      }),
  };
}
