/**
 * docs/protocols.md's sessions run as pasted against the Worker of `npm start` (`wrangler dev`
 * serving workflows/ with .dev.vars.example's values): a chat UI's two requests, a streamed answer,
 * the OpenAI SDK, and an MCP host's `tools/list` and `tools/call` must print what the page shows,
 * but for run ids and times. `UPDATE_DOCS=1` writes what they printed into the page instead:
 *
 *   UPDATE_DOCS=1 npx vitest run --config vitest.e2e.config.ts test/e2e/protocols-session.e2e.test.ts
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type DocStack,
  freshShell,
  replay,
  sessionBlocks,
  shapedSession,
  startDocStack,
  withOutputs,
} from "./doc-session.ts";

const ROOT = join(import.meta.dirname, "../..");
const PAGE = join(ROOT, "docs/protocols.md");
const DOCUMENTED_HOST = "localhost:8787";

let stack: DocStack;

beforeAll(async () => {
  stack = await startDocStack();
});

afterAll(async () => {
  await stack?.stop();
});

describe("docs/protocols.md", () => {
  it("prints, command by command, what the page shows", async () => {
    const page = readFileSync(PAGE, "utf8");
    const steps = sessionBlocks(page).flatMap((b) => b.steps);
    expect(steps).toHaveLength(6);
    const host = new URL(stack.worker.url).host;
    const printed = (
      await replay(
        steps.map((s) => s.command.join("\n").replaceAll(DOCUMENTED_HOST, host)),
        { cwd: stack.project, env: freshShell(), timeoutMs: 60_000 },
      )
    ).map((out) => out.replaceAll(host, DOCUMENTED_HOST));
    if (process.env.UPDATE_DOCS) {
      writeFileSync(PAGE, withOutputs(page, printed));
      return;
    }
    const { want, got } = shapedSession(steps, printed);
    expect(got).toEqual(want);
    // The answers are the workflow's: the greeting, streamed and not, and the tool's output.
    expect(printed[1]).toContain('"content":"Hello, Ada!"');
    expect(printed[2]).toContain('"content":"Hello, Grace!"');
    expect(printed[2]?.trimEnd().endsWith("data: [DONE]")).toBe(true);
    expect(printed[3]).toMatch(/^Hello, Linus! \(run [0-9a-f]{64}\)$/);
    expect(printed[5]).toContain('"structuredContent":{"result":{"name":"Ada","greeting":"Hello, Ada!"}}');
  }, 120_000);
});
