/**
 * Test helper: writes a small workflows/ folder to a temp dir, compiles it, and finds
 * diagnostics by file, line and column, so each test states exactly where the user is pointed.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { expect } from "vitest";
import { type CompileResult, compileProject, type Diagnostic } from "../../src/compiler/index.ts";

const made: string[] = [];

export interface TempProject {
  dir: string;
  result: CompileResult;
  errors: Diagnostic[];
  warnings: Diagnostic[];
}

export function writeProject(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), "wf-compiler-"));
  made.push(dir);
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, name)), { recursive: true });
    writeFileSync(join(dir, name), text);
  }
  return dir;
}

/**
 * Compiles `files` as a workflows folder. Its `wrangler.toml` (one of `files`, if given) is the
 * one `schedule` and `invoke.rate_limit` are checked against; it is not a workflow file.
 */
export function compileFiles(files: Record<string, string>): TempProject {
  const dir = writeProject(files);
  const result = compileProject(dir, { wranglerConfig: join(dir, "wrangler.toml") });
  return {
    dir,
    result,
    errors: result.diagnostics.filter((d) => d.severity === "error"),
    warnings: result.diagnostics.filter((d) => d.severity === "warning"),
  };
}

export function removeProjects(): void {
  for (const d of made.splice(0)) rmSync(d, { recursive: true, force: true });
}

/** Asserts that the diagnostics hold one at `file:line:col` whose message matches. */
export function expectDiagnostic(
  p: TempProject,
  severity: "error" | "warning",
  file: string,
  line: number,
  col: number,
  message: RegExp,
): Diagnostic {
  const list = severity === "error" ? p.errors : p.warnings;
  const path = join(p.dir, file);
  const found = list.find(
    (d) => d.file === path && d.line === line && d.col === col && message.test(d.message),
  );
  if (!found) {
    expect.fail(
      `no ${severity} ${file}:${line}:${col} matching ${message}; got:\n${p.result.diagnostics.map((d) => d.text).join("\n")}`,
    );
  }
  expect(found.text).toBe(
    severity === "error"
      ? `${path}:${line}:${col}: ${found.message}`
      : `${path}:${line}:${col}: warning: ${found.message}`,
  );
  return found;
}

/** The only error of the run is at `file:line:col` and matches. */
export function expectOnlyError(
  p: TempProject,
  file: string,
  line: number,
  col: number,
  message: RegExp,
): void {
  expectDiagnostic(p, "error", file, line, col, message);
  expect(p.errors.map((d) => d.text)).toHaveLength(1);
  expect(p.result.bundle).toBeNull();
}

/** A valid root workflow head (9 lines); steps written after it start on line 10. */
export const HEAD = `kind: workflow
name: t
params:
  schema: {type: object}
invoke:
  auth: {secret: "{{ env.TOKEN }}"}
env:
  - {name: TOKEN, secret: true}
pipeline:
`;

/** A gateway with a priced group `economy` and an unpriced group `free`. */
export const GATEWAY = `env:
  - {name: OPENAI_API_KEY, secret: true}
providers:
  - name: openai
    type: openai
    config: {api_key: "{{ env.OPENAI_API_KEY }}"}
model_groups:
  - name: economy
    models: [openai/gpt-4o-mini]
    pricing:
      - {model: gpt-4o-mini, input_per_million: 0.15, output_per_million: 0.6}
  - name: free
    models: [openai/gpt-4o-mini]
`;
