/**
 * The console sessions of README.md and docs/http-api.md run as pasted against the Worker of
 * `npm start` serving workflows/ (.dev.vars.example's values, the chat and the warehouse pointed
 * at the local receiver): each command prints what its page shows, but for run ids, times and
 * durations, and for what a page leaves out with `…` (it may also wrap a JSON line). docs/cli.md
 * and docs/walkthrough.md have tests of their own (they set up files and terminals). With
 * `UPDATE_DOCS=1` the outputs a page shows in full are rewritten from what the commands printed;
 * abbreviated ones are kept by hand (the test says which differ):
 *
 *   UPDATE_DOCS=1 npx vitest run --config vitest.e2e.config.ts test/e2e/pages-session.e2e.test.ts
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
  shape,
  showsAs,
  startDocStack,
  withOutputs,
} from "./doc-session.ts";

const ROOT = join(import.meta.dirname, "../..");
const PAGES = ["README.md", "docs/http-api.md"];

let stack: DocStack;

beforeAll(async () => {
  stack = await startDocStack();
});

afterAll(async () => {
  await stack?.stop();
});

describe.each(PAGES)("%s", (page) => {
  it("prints, command by command, what the page shows", async () => {
    const path = join(ROOT, page);
    const text = readFileSync(path, "utf8");
    const steps = sessionBlocks(text).flatMap((b) => b.steps);
    expect(steps.length).toBeGreaterThan(1);
    const host = stack.worker.url.replace("http://", "");
    const printed = (
      await replay(
        steps.map((s) =>
          s.command
            .join("\n")
            .replaceAll(DOCUMENTED_URL, stack.worker.url)
            .replaceAll("localhost:8787", host),
        ),
        { cwd: stack.project, env: freshShell(), timeoutMs: 60_000 },
      )
    ).map((out) => out.replaceAll(stack.worker.url, DOCUMENTED_URL).replaceAll(host, "localhost:8787"));
    expect(printed).toHaveLength(steps.length);

    const pageIds = new Map<string, string>();
    const runIds = new Map<string, string>();
    const compared = steps.map((s, i) => {
      const shown = shape(s.output.join("\n"), pageIds);
      const got = shape(printed[i] as string, runIds);
      return { command: s.command.join("\n"), shown, printed: got, same: showsAs(got, shown) };
    });
    if (process.env.UPDATE_DOCS) {
      // Abbreviated outputs that still hold stay as the page wrote them.
      const outputs = steps.map((s, i) =>
        s.output.join("\n").includes("…") && compared[i]?.same ? s.output.join("\n") : (printed[i] as string),
      );
      writeFileSync(path, withOutputs(text, outputs));
      return;
    }
    expect(compared.filter((c) => !c.same)).toEqual([]);
  }, 120_000);
});
