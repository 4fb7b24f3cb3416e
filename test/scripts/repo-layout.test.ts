/**
 * What keeps the repository readable for whoever carries it on: the tests mirror src/ (every
 * folder of the Worker, every room of the run layer and every trigger has its folder of tests), no
 * file is too long to read whole, and the code cites the project's own pages, never a document
 * that is not in the repository.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = resolve(import.meta.dirname, "../..");
const dirs = (path: string) =>
  readdirSync(join(ROOT, path)).filter((n) => statSync(join(ROOT, path, n)).isDirectory());

function files(path: string): string[] {
  return readdirSync(join(ROOT, path)).flatMap((name) => {
    const p = join(path, name);
    // Build output (generated, bench/tmp) and the copied JMESPath compliance suite are not ours.
    if (statSync(join(ROOT, p)).isDirectory())
      return ["generated", "tmp", "conformance", "node_modules"].includes(name) ? [] : files(p);
    return /\.(ts|cjs|mjs|js|md|yaml|json|toml)$/.test(name) ? [p] : [];
  });
}

/** A file longer than this is split by what its parts are (docs/architecture.md). */
const MAX_LINES = 450;

describe("the repository's layout", () => {
  it("has a test/<folder> for every src/<folder>", () => {
    const missing = dirs("src")
      .filter((d) => d !== "generated")
      .filter((d) => !dirs("test").includes(d));
    expect(missing).toEqual([]);
  });

  it("has a test/<folder>/<room> for every room of the run layer and every trigger", () => {
    const missing = ["run", "triggers"].flatMap((layer) =>
      dirs(`src/${layer}`)
        .filter((room) => !dirs(`test/${layer}`).includes(room))
        .map((room) => `${layer}/${room}`),
    );
    expect(missing).toEqual([]);
  });

  it("has no source file over 450 lines in src, cli, scripts or bench", () => {
    const long = ["src", "cli", "scripts", "bench"]
      .flatMap(files)
      .filter((f) => f.endsWith(".ts"))
      .map((f) => ({ f, lines: readFileSync(join(ROOT, f), "utf8").split("\n").length - 1 }))
      .filter(({ lines }) => lines > MAX_LINES)
      .map(({ f, lines }) => `${f}: ${lines} lines`);
    expect(long).toEqual([]);
  });

  it("cites no document outside the repository in code, tests, docs, schemas or workflows", () => {
    const citing = ["src", "cli", "scripts", "bench", "test", "docs", "schema", "workflows"]
      .flatMap(files)
      .concat(["README.md", "wrangler.toml"])
      .filter((f) => /\bSPEC\b/.test(readFileSync(join(ROOT, f), "utf8")))
      .map((f) => relative(ROOT, join(ROOT, f)));
    expect(citing).toEqual([]);
  });
});
