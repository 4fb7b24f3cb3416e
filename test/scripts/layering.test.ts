/**
 * Data flows one way (STYLE.md): the engine and the step executors never import the HTTP face,
 * the run object or the app; the compiler never imports the runtime shell. A new import "up"
 * fails here with the file and the import that broke the rule.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const SRC = resolve(import.meta.dirname, "../../src");

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return e.name === "generated" ? [] : sources(p);
    return e.name.endsWith(".ts") ? [p] : [];
  });
}

/** Every relative import of `file`, as a path relative to src/. */
function importsOf(file: string): string[] {
  const text = readFileSync(file, "utf8");
  const out: string[] = [];
  for (const m of text.matchAll(/(?:^|\n)\s*(?:import|export)[^;]*?from\s+"(\.[^"]+)"/g)) {
    if (m[1]) out.push(relative(SRC, resolve(file, "..", m[1])));
  }
  return out;
}

const FORBIDDEN: Record<string, RegExp> = {
  engine: /^(http|run|steps|viewer|openapi|app\.ts|index\.ts)(\/|$)/,
  steps: /^(http|run|viewer|openapi|app\.ts|index\.ts)(\/|$)/,
  // The build may share pure helpers of the runtime (run/secrets.ts), never its Worker shell.
  compiler: /^(http|steps|viewer|app\.ts|index\.ts|run\/run-object\.ts|run\/run-index\.ts)(\/|$)/,
};

describe("module layering", () => {
  for (const [layer, forbidden] of Object.entries(FORBIDDEN)) {
    it(`src/${layer} imports nothing above it`, () => {
      const bad = sources(join(SRC, layer)).flatMap((f) =>
        importsOf(f)
          .filter((i) => forbidden.test(i))
          .map((i) => `${relative(SRC, f)} imports ${i}`),
      );
      expect(bad).toEqual([]);
    });
  }
});
