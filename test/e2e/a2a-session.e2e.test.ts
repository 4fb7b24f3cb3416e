/**
 * docs/a2a.md's session runs as pasted against the Worker of `npm start` (`wrangler dev` serving
 * workflows/ with .dev.vars.example's values): the refund-request agent's card, a task that waits
 * for approval, the approval given through A2A, a second task canceled, and the cancel of a
 * canceled task refused. `UPDATE_DOCS=1` writes what they printed into the page instead:
 *
 *   UPDATE_DOCS=1 npx vitest run --config vitest.e2e.config.ts test/e2e/a2a-session.e2e.test.ts
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
const PAGE = join(ROOT, "docs/a2a.md");
const DOCUMENTED_HOST = "localhost:8787";

let stack: DocStack;

beforeAll(async () => {
  stack = await startDocStack();
});

afterAll(async () => {
  await stack?.stop();
});

describe("docs/a2a.md", () => {
  it("prints, command by command, what the page shows", async () => {
    const page = readFileSync(PAGE, "utf8");
    const steps = sessionBlocks(page).flatMap((b) => b.steps);
    expect(steps).toHaveLength(9);
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
    expect(printed[2]).toContain('"state":"TASK_STATE_INPUT_REQUIRED"');
    expect(printed[4]).toContain('"state":"TASK_STATE_COMPLETED"');
    expect(printed[4]).toContain('"refunded":true');
    expect(printed[7]).toContain('"state":"TASK_STATE_CANCELED"');
    expect(printed[8]).toContain('"code":-32002');
  }, 120_000);
});
