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
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  DOCUMENTED_URL,
  type DocStack,
  freshShell,
  replay,
  sessionBlocks,
  shapedSession,
  startDocStack,
  withOutputs,
} from "./doc-session.ts";

const ROOT = join(import.meta.dirname, "../..");
const PAGE = join(ROOT, "docs/cli.md");

let stack: DocStack;

beforeAll(async () => {
  stack = await startDocStack();
});

afterAll(async () => {
  await stack?.stop();
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
    const env = freshShell();
    const printed = (
      await replay(
        steps.map((s) => s.command.join("\n").replaceAll(DOCUMENTED_URL, stack.worker.url)),
        { cwd: stack.project, env, timeoutMs: 150_000 },
      )
    ).map((out) => out.replaceAll(stack.worker.url, DOCUMENTED_URL));
    expect(printed).toHaveLength(steps.length);

    if (process.env.UPDATE_DOCS) {
      writeFileSync(PAGE, withOutputs(page, printed));
      return;
    }
    const { want, got } = shapedSession(steps, printed);
    expect(got).toEqual(want);
    // The receiver stood in for the warehouse: the reservation and both shipments reached it.
    expect(stack.receiver.printed()).toMatch(/ POST \/reservations\n/);
    expect(stack.receiver.printed().match(/ POST \/shipments\n/g)).toHaveLength(2);
  }, 240_000);
});
