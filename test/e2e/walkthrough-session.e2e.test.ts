/**
 * docs/walkthrough.md runs as pasted, from an empty workflow file to a burst: the files the page
 * says to create are written into a user's checkout, the page's console blocks before `npm start`
 * run there offline (validate, the workflow's tests, `.dev.vars`), then the Worker starts from
 * that checkout as the page starts it (its `.dev.vars`, the page's `--var` values pointing at the
 * receiver) and the rest of the page's commands run against it, in one bash, in order. Each must
 * print what the page shows but for run ids, times and durations, and the receiver must have
 * printed each of the page's `text receiver` blocks. `UPDATE_DOCS=1` writes what the commands
 * printed into the page instead (the receiver blocks are kept by hand: the test says which
 * differ):
 *
 *   UPDATE_DOCS=1 npx vitest run --config vitest.e2e.config.ts test/e2e/walkthrough-session.e2e.test.ts
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  DOCUMENTED_URL,
  devVars,
  freshShell,
  type Receiver,
  replay,
  sessionBlocks,
  shape,
  shapedSession,
  startReceiver,
  userCheckout,
  withOutputs,
} from "./doc-session.ts";
import { startWorker, type WorkerProcess } from "./worker-process.ts";

const ROOT = join(import.meta.dirname, "../..");
const PAGE = join(ROOT, "docs/walkthrough.md");
/** Where the page's receiver listens (`npm run receiver`'s default port). */
const DOCUMENTED_RECEIVER = "http://127.0.0.1:9100";

let receiver: Receiver;
let worker: WorkerProcess | undefined;
let project = "";

beforeAll(async () => {
  receiver = await startReceiver();
  project = userCheckout();
});

afterAll(async () => {
  await worker?.stop();
  receiver?.stop();
  if (project) rmSync(project, { recursive: true, force: true });
});

/** Each "Create `path`" of the page, the YAML block after it, and the page line it is on. */
function createdFiles(page: string): { path: string; text: string; line: number }[] {
  const files: { path: string; text: string; line: number }[] = [];
  for (const m of page.matchAll(/Create `([^`]+)`/g)) {
    const open = page.indexOf("```yaml\n", m.index);
    const close = page.indexOf("\n```\n", open);
    const line = page.slice(0, m.index).split("\n").length - 1;
    files.push({ path: m[1] as string, text: page.slice(open + "```yaml\n".length, close + 1), line });
  }
  return files;
}

/** The `--var NAME:value` options of the page's `npm start` line. */
function startVars(page: string): Record<string, string> {
  const line = page.split("\n").find((l) => l.startsWith("npm start -- --var ")) ?? "";
  return Object.fromEntries(
    [...line.matchAll(/--var ([A-Z_]+):(\S+)/g)].map((m) => [
      m[1],
      (m[2] as string).replace(DOCUMENTED_RECEIVER, receiver.url),
    ]),
  );
}

/** The page's ```text receiver blocks: what the receiver printed, as the page shows it. */
function receiverBlocks(page: string): string[] {
  return [...page.matchAll(/```text receiver\n([\s\S]*?)\n```/g)].map((m) => m[1] as string);
}

describe("docs/walkthrough.md", () => {
  it("creates a workflow and its test, and starts the Worker with the receiver", () => {
    const page = readFileSync(PAGE, "utf8");
    expect(createdFiles(page).map((f) => f.path)).toEqual([
      "workflows/greet-team.workflow.yaml",
      "workflows/tests/greet-team.test.yaml",
    ]);
    expect(page).toContain("npm run receiver\n");
    expect(Object.keys(startVars(page))).toEqual(["CHAT_WEBHOOK_URL", "WAREHOUSE_URL"]);
  });

  it("prints, command by command, what the page shows", async () => {
    const page = readFileSync(PAGE, "utf8");
    const files = createdFiles(page);
    const startLine = page.split("\n").findIndex((l) => l.startsWith("npm start -- --var "));
    const blocks = sessionBlocks(page);
    const offlineBlocks = blocks.filter((b) => b.start < startLine);
    const offline = offlineBlocks.flatMap((b) => b.steps);
    const served = blocks.filter((b) => b.start > startLine).flatMap((b) => b.steps);
    expect(offline.length).toBeGreaterThan(2);
    expect(served.length).toBeGreaterThan(20);

    // Each file is written where the page says to create it, so a command before it sees the
    // project as a reader's is then (step 1's validate runs before step 2's test file exists).
    const env = freshShell();
    const printed: string[] = [];
    const written = new Set<string>();
    for (const block of offlineBlocks) {
      for (const f of files.filter((f) => f.line < block.start && !written.has(f.path))) {
        mkdirSync(dirname(join(project, f.path)), { recursive: true });
        writeFileSync(join(project, f.path), f.text);
        written.add(f.path);
      }
      printed.push(
        ...(await replay(
          block.steps.map((s) => s.command.join("\n")),
          { cwd: project, env, timeoutMs: 60_000 },
        )),
      );
    }
    expect([...written]).toEqual(files.map((f) => f.path));
    // The Worker as `npm start` serves the checkout: its .dev.vars (written by the commands
    // above) and the page's --var values.
    worker = await startWorker(
      { ...devVars(join(project, ".dev.vars")), ...startVars(page) },
      join(project, "workflows"),
    );
    printed.push(
      ...(
        await replay(
          served.map((s) => s.command.join("\n").replaceAll(DOCUMENTED_URL, worker?.url ?? "")),
          { cwd: project, env, timeoutMs: 180_000 },
        )
      ).map((out) => out.replaceAll(worker?.url ?? "", DOCUMENTED_URL)),
    );
    const steps = [...offline, ...served];
    expect(printed).toHaveLength(steps.length);

    if (process.env.UPDATE_DOCS) {
      writeFileSync(PAGE, withOutputs(page, printed));
      console.log(`the receiver printed:\n${receiver.printed()}`);
      return;
    }
    const { want, got, pageIds, runIds } = shapedSession(steps, printed);
    expect(got).toEqual(want);
    // The receiver stood in for the chat and the warehouse: it printed what the page shows.
    const received = shape(receiver.printed(), runIds);
    for (const block of receiverBlocks(page)) expect(received).toContain(shape(block, pageIds));
  }, 300_000);
});
