/**
 * Runs the CLI as a user runs it (`node cli/bin.ts`, what the `workflow-edge` bin and `npm run
 * cli` start), asynchronously so a test's own HTTP server keeps answering meanwhile.
 */
import { spawn } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = fileURLToPath(new URL("../../", import.meta.url));

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export function runCli(
  args: string[],
  opts: { cwd?: string; env?: Record<string, string> } = {},
): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(ROOT, "cli/bin.ts"), ...args], {
      cwd: opts.cwd ?? ROOT,
      env: { ...process.env, NO_COLOR: "1", WORKFLOW_EDGE_URL: "", WORKFLOW_EDGE_TOKEN: "", ...opts.env },
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c) => {
      stdout += c;
    });
    child.stderr.on("data", (c) => {
      stderr += c;
    });
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}
