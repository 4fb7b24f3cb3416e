/**
 * Helpers for the tests of `npm run test:workflows`: run the runner in-process on a directory
 * and keep what it printed, or run the CLI as users do (a child process on the project's Node).
 */
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { runWorkflowTests, type Summary } from "../../src/testing/runner.ts";

export const root = fileURLToPath(new URL("../..", import.meta.url));
export const FIXTURE = join(root, "test/fixtures/wftest-project");

export async function runTests(dir: string, only: string[] = []): Promise<{ summary: Summary; out: string }> {
  const lines: string[] = [];
  const summary = await runWorkflowTests(dir, { only, write: (l) => lines.push(l) });
  return { summary, out: lines.join("\n") };
}

export function runCli(...args: string[]): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(
    join(root, "node_modules/.bin/node"),
    [join(root, "scripts/test-workflows.ts"), ...args],
    {
      cwd: root,
      encoding: "utf8",
    },
  );
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}
