/**
 * A page's terminal session as a script: the ```console blocks of a Markdown page, in order, are
 * one shell session. `$ ` starts a command, `> ` continues it, and the lines after it (to the
 * next command) are what it prints. `replay` runs every command in one bash, in order, and
 * returns what each printed (stdout and stderr together, as a terminal shows them); `shape`
 * blanks what differs from run to run (run ids, kept apart by the order they first appear in,
 * times, durations, list cursors), so that a page can be held to what its commands really print.
 */

import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { poll } from "../support/poll.ts";
import { startWorker, type WorkerProcess } from "./worker-process.ts";

const ROOT = join(import.meta.dirname, "../..");
/** What a page's commands assume `npm start` answers on. */
export const DOCUMENTED_URL = "http://localhost:8787";

export interface SessionStep {
  /** The command's lines, without their `$ ` / `> ` prompts. */
  command: string[];
  /** What the page says it prints, trailing blank lines dropped. */
  output: string[];
}

export interface SessionBlock {
  /** Line index of the opening ```console fence in the page. */
  start: number;
  /** Line index of the closing fence. */
  end: number;
  steps: SessionStep[];
}

export function sessionBlocks(page: string): SessionBlock[] {
  const lines = page.split("\n");
  const blocks: SessionBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (lines[i] !== "```console") continue;
    const block: SessionBlock = { start: i, end: i, steps: [] };
    for (i++; i < lines.length && lines[i] !== "```"; i++) {
      const line = lines[i] as string;
      const step = block.steps[block.steps.length - 1];
      if (line.startsWith("$ ")) block.steps.push({ command: [line.slice(2)], output: [] });
      else if (line.startsWith("> ") && step && step.output.length === 0) step.command.push(line.slice(2));
      else if (step) step.output.push(line);
      else if (line.trim() !== "") throw new Error(`line ${i + 1}: output before any command`);
    }
    block.end = i;
    for (const step of block.steps) {
      while (step.output.length > 0 && (step.output[step.output.length - 1] as string).trim() === "")
        step.output.pop();
    }
    blocks.push(block);
  }
  return blocks;
}

/** The page with each block's outputs replaced by `outputs` (one per step, in page order). */
export function withOutputs(page: string, outputs: string[]): string {
  const lines = page.split("\n");
  const blocks = sessionBlocks(page);
  let next = 0;
  // From the last block up, so that earlier line indexes stay valid.
  const texts = blocks.map((b) =>
    b.steps
      .map((s) =>
        [
          `$ ${s.command[0]}`,
          ...s.command.slice(1).map((c) => `> ${c}`),
          ...(outputs[next++] ?? "").split("\n").map((l) => l.trimEnd()),
        ]
          .join("\n")
          .trimEnd(),
      )
      .join("\n\n"),
  );
  for (let b = blocks.length - 1; b >= 0; b--) {
    const block = blocks[b] as SessionBlock;
    lines.splice(block.start + 1, block.end - block.start - 1, ...(texts[b] as string).split("\n"));
  }
  return lines.join("\n");
}

const MARK = "@@ end of a documented command @@";

/** Runs the commands in one bash in `cwd`; what each printed, trailing newlines dropped. */
export function replay(
  commands: string[],
  opts: { cwd: string; env: NodeJS.ProcessEnv; timeoutMs: number },
): Promise<string[]> {
  const script = ["exec 2>&1", ...commands.flatMap((c) => [c, `printf '\\n%s\\n' '${MARK}'`])].join("\n");
  return new Promise((resolve, reject) => {
    const child = spawn("bash", ["-c", script], { cwd: opts.cwd, env: opts.env, detached: true });
    let out = "";
    child.stdout.on("data", (c) => {
      out += c;
    });
    const timer = setTimeout(() => {
      if (child.pid !== undefined) process.kill(-child.pid, "SIGKILL");
      reject(new Error(`the session did not end within ${opts.timeoutMs} ms; it printed:\n${out}`));
    }, opts.timeoutMs);
    child.on("error", reject);
    child.on("close", () => {
      clearTimeout(timer);
      const parts = out.split(`\n${MARK}\n`);
      parts.pop(); // what follows the last command's mark: nothing
      resolve(parts.map((p) => p.replace(/\n+$/, "")));
    });
  });
}

/** `text` with what differs from run to run blanked; `ids` numbers run ids across a session. */
export function shape(text: string, ids: Map<string, string>): string {
  const label = (id: string) => {
    if (!ids.has(id)) ids.set(id, `<run ${ids.size + 1}>`);
    return ids.get(id) as string;
  };
  return (
    text
      // curl -i prints the headers with CRLF line ends, as they came.
      .replace(/\r$/gm, "")
      .replace(/\b[0-9a-f]{64}\b/g, label)
      // A random UUID (an A2A context id).
      .replace(/\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/g, "<uuid>")
      // A run id shortened to 12 characters (`reused from 8511a5656254`).
      .replace(/\b[0-9a-f]{12}\b/g, (p) => [...ids].find(([id]) => id.startsWith(p))?.[1] ?? p)
      // A trace's id, alone (`trace_id`) or in a W3C traceparent header.
      .replace(/\b00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]\b/g, "<traceparent>")
      .replace(/\b[0-9a-f]{32}\b/g, "<trace>")
      .replace(/"duration_ms":\d+/g, '"duration_ms":<duration>')
      // OpenAI's `created`: epoch seconds.
      .replace(/"created":\d+/g, '"created":<time>')
      .replace(/\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z\b/g, "<time>")
      .replace(/\b\d\d:\d\d:\d\d\.\d{3}\b/g, "<time>")
      .replace(/\b[A-Z][a-z]{2}, \d\d [A-Z][a-z]{2} \d{4} \d\d:\d\d:\d\d GMT\b/g, "<time>")
      .replace(/\b\d+ min \d+ s\b|\b\d+(\.\d+)? m?s\b/g, "<duration>")
      .replace(/\beyJ[\w.-]+/g, "<cursor>")
      // Column widths follow the durations: only the order of the words counts.
      .replace(/[ \t]+/g, " ")
      .replace(/ +$/gm, "")
  );
}

/** A `.dev.vars` file as wrangler reads it: NAME=value lines (comments and blanks skipped). */
export function devVars(path: string): Record<string, string> {
  const text = readFileSync(path, "utf8");
  return Object.fromEntries([...text.matchAll(/^([A-Z][A-Z0-9_]*)=(.*)$/gm)].map((m) => [m[1], m[2]]));
}

/**
 * A user's checkout in a temporary directory: the project's files (copied, so that what a page's
 * commands write, `init`'s files or a new workflow, lands in the copy) and its installed
 * node_modules (linked).
 */
export function userCheckout(): string {
  const project = mkdtempSync(join(tmpdir(), "workflow-edge-doc-session-"));
  for (const f of ["cli", "scripts", "src", "schema", "workflows", "package.json", "tsconfig.json"])
    cpSync(join(ROOT, f), join(project, f), { recursive: true });
  for (const f of ["tsconfig.base.json", "tsconfig.node.json", "wrangler.toml", ".dev.vars.example"])
    cpSync(join(ROOT, f), join(project, f));
  symlinkSync(join(ROOT, "node_modules"), join(project, "node_modules"));
  return project;
}

/** An environment like a fresh shell's: no CLI settings, and no npm run around it. */
export function freshShell(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  // npm sets INIT_CWD to where it runs.
  for (const k of ["WORKFLOW_EDGE_URL", "WORKFLOW_EDGE_TOKEN", "INIT_CWD", "NO_COLOR", "FORCE_COLOR"])
    delete env[k];
  return env;
}

export interface Receiver {
  /** `http://127.0.0.1:<port>` */
  url: string;
  /** What it printed so far. */
  printed(): string;
  stop(): void;
}

/** `npm run receiver` (scripts/receiver.ts) on a free port, as the pages run it in a terminal. */
export async function startReceiver(): Promise<Receiver> {
  const child: ChildProcessWithoutNullStreams = spawn(process.execPath, [
    join(ROOT, "scripts/receiver.ts"),
    "--port",
    "0",
  ]);
  let out = "";
  child.stdout.on("data", (c) => {
    out += c;
  });
  const url = await poll(
    "the receiver to print where it listens",
    () => /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(out)?.[1] ?? "",
    (u) => u !== "",
    { timeoutMs: 10_000, intervalMs: 50 },
  );
  return {
    url,
    printed: () => out,
    stop: () => {
      if (child.exitCode === null) child.kill();
    },
  };
}

/**
 * Each step as the page shows it (`want`) and as its command printed it (`got`), both shaped:
 * equal when the page holds. Run ids are numbered in order of first appearance, on each side
 * (`pageIds`, `runIds`: shape more text of the same session with them).
 */
export function shapedSession(steps: SessionStep[], printed: string[]) {
  const pageIds = new Map<string, string>();
  const runIds = new Map<string, string>();
  const want = steps.map((s) => `$ ${s.command.join("\n")}\n${shape(s.output.join("\n"), pageIds)}`);
  const got = steps.map((s, i) => `$ ${s.command.join("\n")}\n${shape(printed[i] as string, runIds)}`);
  return { want, got, pageIds, runIds };
}

/**
 * Whether a command's output, as printed, is what a page shows: both shaped, then equal, except
 * that the page may leave out what does not matter to it: `…` stands for any text, and line
 * breaks and indentation are free (a page may wrap a JSON line to fit).
 */
export function showsAs(printed: string, shown: string): boolean {
  if (printed === shown) return true;
  const pattern = shown
    .split("…")
    .map((part) =>
      part
        .trim()
        .split(/\s+/)
        .map((word) => word.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"))
        .join("\\s*"),
    )
    .join("[\\s\\S]*?");
  return new RegExp(`^\\s*${pattern}\\s*$`).test(printed);
}

/** What a page's session runs against: the receiver, `npm start` and a user's checkout. */
export interface DocStack {
  receiver: Receiver;
  worker: WorkerProcess;
  /** The checkout the commands run in. */
  project: string;
  stop(): Promise<void>;
}

/**
 * The set-up the pages describe: `npm run receiver`, and `npm start` serving workflows/ with
 * .dev.vars.example's values and the chat and the warehouse pointed at the receiver.
 */
export async function startDocStack(): Promise<DocStack> {
  const receiver = await startReceiver();
  const worker = await startWorker(
    {
      ...devVars(join(ROOT, ".dev.vars.example")),
      CHAT_WEBHOOK_URL: `${receiver.url}/hook`,
      WAREHOUSE_URL: receiver.url,
    },
    "workflows",
  );
  const project = userCheckout();
  return {
    receiver,
    worker,
    project,
    stop: async () => {
      await worker.stop();
      receiver.stop();
      rmSync(project, { recursive: true, force: true });
    },
  };
}
