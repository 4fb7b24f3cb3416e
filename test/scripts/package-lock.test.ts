/**
 * `npm install` on a clean clone leaves the committed package-lock.json as it is: the lock's
 * record of the project itself (its root entry) says what package.json says, which is what npm
 * would otherwise write back (it did for `bin`). The README's Node versions are package.json's
 * `engines`.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = join(import.meta.dirname, "../..");
const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8"));
const lock = JSON.parse(readFileSync(join(ROOT, "package-lock.json"), "utf8"));

describe("package-lock.json", () => {
  it("records the project as package.json declares it, so npm install has nothing to write", () => {
    const root = lock.packages[""];
    for (const field of ["name", "version", "dependencies", "devDependencies", "bin", "engines"]) {
      expect(root[field], field).toEqual(pkg[field]);
    }
    expect(lock.name).toBe(pkg.name);
    expect(lock.version).toBe(pkg.version);
  });

  it("pins every dependency package.json names, at the version it names", () => {
    for (const [name, version] of Object.entries({ ...pkg.dependencies, ...pkg.devDependencies })) {
      expect(lock.packages[`node_modules/${name}`]?.version, name).toBe(version);
    }
  });
});

describe("README", () => {
  it("asks for the Node version that package.json's engines asks for", () => {
    expect(pkg.engines.node).toBe(">=20");
    expect(readFileSync(join(ROOT, "README.md"), "utf8")).toContain("You need Node.js 20 or newer");
  });
});
