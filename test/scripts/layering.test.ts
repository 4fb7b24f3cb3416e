/**
 * The layer rules (.dependency-cruiser.cjs, run on src/ and cli/ by `npm run lint:layers` in
 * `npm test`, scripts/check-layers.ts) catch what they promise: each test plants one import that
 * breaks a rule in a scratch tree and expects the check to name the rule and the file; and the
 * check refuses a tree with a module dependency-cruiser did not read. The real tree's check is
 * the script itself.
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";

const ROOT = resolve(import.meta.dirname, "../..");
const made: string[] = [];
afterAll(() => {
  for (const d of made) rmSync(d, { recursive: true, force: true });
});

/** Runs `npm run lint:layers`'s script over a scratch tree of `files`; returns its exit code and report. */
function cruise(files: Record<string, string>): { code: number; out: string } {
  const dir = mkdtempSync(join(tmpdir(), "layers-"));
  made.push(dir);
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, name)), { recursive: true });
    writeFileSync(join(dir, name), text);
  }
  writeFileSync(
    join(dir, "tsconfig.json"),
    JSON.stringify({ compilerOptions: { allowImportingTsExtensions: true } }),
  );
  const r = spawnSync(process.execPath, [join(ROOT, "scripts/check-layers.ts")], {
    cwd: dir,
    encoding: "utf8",
  });
  return { code: r.status ?? -1, out: `${r.stdout}${r.stderr}` };
}

describe("the layer rules", () => {
  it("accept a tree that imports only downwards", () => {
    const r = cruise({
      "src/engine/a.ts": 'import { b } from "../common/b.ts";\nexport const a = b;\n',
      "src/common/b.ts": "export const b = 1;\n",
      "cli/main.ts": "export const c = 1;\n",
    });
    expect(r.out.trim()).toBe("layers: 3 modules checked, 0 violations");
    expect(r.code).toBe(0);
  });

  it("refuse a tree with a module dependency-cruiser did not read, naming it", () => {
    // It does not cruise what lies under a node_modules folder, even inside src/.
    const r = cruise({
      "src/engine/a.ts": "export const a = 1;\n",
      "src/engine/node_modules/vendored/v.ts": "export const v = 1;\n",
      "cli/main.ts": "export const c = 1;\n",
    });
    expect(r.code).not.toBe(0);
    expect(r.out).toContain("not cruised: src/engine/node_modules/vendored/v.ts");
    expect(r.out).toContain("layers: 2 modules checked, 0 violations, 1 of 3 modules not cruised");
  });

  it("refuse an engine module that imports the run layer", () => {
    const r = cruise({
      "src/engine/a.ts": 'import { b } from "../run/b.ts";\nexport const a = b;\n',
      "src/run/b.ts": "export const b = 1;\n",
      "cli/main.ts": "export const c = 1;\n",
    });
    expect(r.code).not.toBe(0);
    expect(r.out).toMatch(/engine-is-pure: src\/engine\/a\.ts → src\/run\/b\.ts/);
  });

  it("refuse a compiler module that imports a step executor", () => {
    const r = cruise({
      "src/compiler/a.ts": 'import { b } from "../steps/b.ts";\nexport const a = b;\n',
      "src/steps/b.ts": "export const b = 1;\n",
      "cli/main.ts": "export const c = 1;\n",
    });
    expect(r.code).not.toBe(0);
    expect(r.out).toContain("compiler-reads-no-runtime");
  });

  it("refuse an import cycle", () => {
    const r = cruise({
      "src/compiler/a.ts": 'import { b } from "./b.ts";\nexport const a = () => b;\n',
      "src/compiler/b.ts": 'import { a } from "./a.ts";\nexport const b = () => a;\n',
      "cli/main.ts": "export const c = 1;\n",
    });
    expect(r.code).not.toBe(0);
    expect(r.out).toContain("no-cycles");
  });

  it("refuse a CLI module that imports the Worker's source", () => {
    const r = cruise({
      "src/engine/a.ts": "export const a = 1;\n",
      "cli/main.ts": 'import { a } from "../src/engine/a.ts";\nexport const c = a;\n',
    });
    expect(r.code).not.toBe(0);
    expect(r.out).toContain("cli-speaks-http-only");
  });

  it("refuse a Node built-in in what runs in the Worker", () => {
    const r = cruise({
      "src/run/a.ts": 'import { createHash } from "node:crypto";\nexport const a = createHash;\n',
      "cli/main.ts": "export const c = 1;\n",
    });
    expect(r.code).not.toBe(0);
    expect(r.out).toContain("runtime-has-no-node-builtins");
  });
});
