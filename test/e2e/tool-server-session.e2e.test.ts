/**
 * docs/agents-and-tools.md's OAuth session runs as pasted against `npm run tool-server`
 * (scripts/tool-server.ts, on a free port here; the page's 9200 is rewritten to it): the 401 that
 * names the Protected Resource Metadata, the metadata, a client-credentials token for the server's
 * URL, and a tool call with it, each printing what the page shows.
 */
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { poll } from "../support/poll.ts";
import { freshShell, replay, sessionBlocks } from "./doc-session.ts";

const ROOT = join(import.meta.dirname, "../..");
const PAGE = join(ROOT, "docs/agents-and-tools.md");
const DOCUMENTED = "127.0.0.1:9200";

let child: ChildProcessWithoutNullStreams;
let printed = "";
let host = "";

beforeAll(async () => {
  child = spawn(process.execPath, [join(ROOT, "scripts/tool-server.ts"), "--port", "0"]);
  child.stdout.on("data", (c) => {
    printed += c;
  });
  host = await poll(
    "npm run tool-server to print its URL",
    () => /tool server on http:\/\/(127\.0\.0\.1:\d+)/.exec(printed)?.[1] ?? "",
    (h) => h !== "",
    { timeoutMs: 30_000 },
  );
});

afterAll(() => {
  if (child && child.exitCode === null) child.kill();
});

describe("docs/agents-and-tools.md, OAuth", () => {
  it("prints the credentials the page's session uses", () => {
    const page = readFileSync(PAGE, "utf8");
    const secret = /client_secret:\s+(\S+)/.exec(printed)?.[1] ?? "";
    const id = /client_id:\s+(\S+)/.exec(printed)?.[1] ?? "";
    expect(page).toContain(`-u ${id}:${secret} `);
  });

  it("prints, command by command, what the page shows", async () => {
    const steps = sessionBlocks(readFileSync(PAGE, "utf8")).flatMap((b) => b.steps);
    expect(steps).toHaveLength(4);
    const out = await replay(
      steps.map((s) => s.command.join("\n").replaceAll(DOCUMENTED, host)),
      { cwd: ROOT, env: freshShell(), timeoutMs: 30_000 },
    );
    expect(out.map((o) => o.replaceAll(host, DOCUMENTED).trimEnd())).toEqual(
      steps.map((s) => s.output.join("\n")),
    );
  });
});
