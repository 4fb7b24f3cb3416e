/**
 * What keeps the repository readable for whoever carries it on: the tests mirror src/ (every
 * folder of the Worker has its folder of tests), and the code cites the project's own pages, never
 * a document that is not in the repository.
 */
import { readdirSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = resolve(import.meta.dirname, "../..");
const dirs = (path: string) =>
  readdirSync(join(ROOT, path)).filter((n) => statSync(join(ROOT, path, n)).isDirectory());

describe("the repository's layout", () => {
  it("has a test/<folder> for every src/<folder>", () => {
    const missing = dirs("src")
      .filter((d) => d !== "generated")
      .filter((d) => !dirs("test").includes(d));
    expect(missing).toEqual([]);
  });
});
