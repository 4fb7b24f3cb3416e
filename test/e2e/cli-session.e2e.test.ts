/**
 * docs/cli.md's session runs as pasted: every command of the page's console blocks, in order, in
 * one bash, against the Worker of `npm start` (`wrangler dev` serving workflows/ with
 * .dev.vars.example's values and the local receiver as order-saga's warehouse, as the page sets
 * it up), must print what the page shows, but for run ids, times and durations. The commands run
 * in a copy of the project, so `init` writes there. `UPDATE_DOCS=1` writes what they printed into
 * the page instead:
 *
 *   UPDATE_DOCS=1 npx vitest run --config vitest.e2e.config.ts test/e2e/cli-session.e2e.test.ts
 */
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { replay, sessionBlocks, shape, withOutputs } from "./doc-session.ts";
import { startWorker, type WorkerProcess } from "./worker-process.ts";

const ROOT = join(import.meta.dirname, "../..");
const PAGE = join(ROOT, "docs/cli.md");
/** What the page's commands assume `npm start` answers on. */
const DOCUMENTED_URL = "http://localhost:8787";

let receiver: ChildProcessWithoutNullStreams;
let received = "";
let worker: WorkerProcess;
let project = "";

/** .dev.vars.example as wrangler reads .dev.vars: NAME=value lines. */
function devVars(): Record<string, string> {
  const text = readFileSync(join(ROOT, ".dev.vars.example"), "utf8");
  return Object.fromEntries([...text.matchAll(/^([A-Z][A-Z0-9_]*)=(.*)$/gm)].map((m) => [m[1], m[2]]));
}

beforeAll(async () => {
  receiver = spawn(process.execPath, [join(ROOT, "scripts/receiver.ts"), "--port", "0"]);
  receiver.stdout.on("data", (c) => {
    received += c;
  });
  let receiverUrl = "";
  for (let i = 0; i < 100 && !receiverUrl; i++) {
    receiverUrl = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(received)?.[1] ?? "";
    if (!receiverUrl) await new Promise((r) => setTimeout(r, 50));
  }
  if (!receiverUrl) throw new Error(`the receiver did not start: ${received}`);
  worker = await startWorker({ ...devVars(), WAREHOUSE_URL: receiverUrl }, "workflows");

  // A user's checkout: the project's files (copied, so `init` writes into the copy) and its
  // installed node_modules.
  project = mkdtempSync(join(tmpdir(), "workflow-edge-cli-session-"));
  for (const f of ["cli", "scripts", "src", "schema", "workflows", "package.json", "tsconfig.json"])
    cpSync(join(ROOT, f), join(project, f), { recursive: true });
  for (const f of ["tsconfig.base.json", "tsconfig.node.json", "wrangler.toml"])
    cpSync(join(ROOT, f), join(project, f));
  symlinkSync(join(ROOT, "node_modules"), join(project, "node_modules"));
});

afterAll(async () => {
  await worker?.stop();
  if (receiver && receiver.exitCode === null) receiver.kill();
  if (project) rmSync(project, { recursive: true, force: true });
});

describe("docs/cli.md", () => {
  it("sets up the Worker the way this test does", () => {
    const page = readFileSync(PAGE, "utf8");
    expect(page).toContain("cp .dev.vars.example .dev.vars\n");
    expect(page).toContain("npm run receiver ");
    expect(page).toContain("npm start -- --var WAREHOUSE_URL:http://127.0.0.1:9100 ");
  });

  it("prints, command by command, what the page shows", async () => {
    const page = readFileSync(PAGE, "utf8");
    const steps = sessionBlocks(page).flatMap((b) => b.steps);
    expect(steps.length).toBeGreaterThan(20);
    const env: NodeJS.ProcessEnv = { ...process.env };
    // A fresh shell: no CLI settings, and no npm run around it (npm sets INIT_CWD to where it runs).
    for (const k of ["WORKFLOW_EDGE_URL", "WORKFLOW_EDGE_TOKEN", "INIT_CWD", "NO_COLOR", "FORCE_COLOR"])
      delete env[k];
    const printed = (
      await replay(
        steps.map((s) => s.command.join("\n").replaceAll(DOCUMENTED_URL, worker.url)),
        { cwd: project, env, timeoutMs: 150_000 },
      )
    ).map((out) => out.replaceAll(worker.url, DOCUMENTED_URL));
    expect(printed).toHaveLength(steps.length);

    if (process.env.UPDATE_DOCS) {
      writeFileSync(PAGE, withOutputs(page, printed));
      return;
    }
    const pageIds = new Map<string, string>();
    const runIds = new Map<string, string>();
    const want = steps.map((s) => `$ ${s.command.join("\n")}\n${shape(s.output.join("\n"), pageIds)}`);
    const got = steps.map((s, i) => `$ ${s.command.join("\n")}\n${shape(printed[i] as string, runIds)}`);
    expect(got).toEqual(want);
    // The receiver stood in for the warehouse: the reservation and both shipments reached it.
    expect(received).toMatch(/ POST \/reservations\n/);
    expect(received.match(/ POST \/shipments\n/g)).toHaveLength(2);
  }, 240_000);
});
