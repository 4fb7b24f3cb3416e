/**
 * The compiler (src/compiler/) on mutated example files: the project in workflows/ with one of its
 * workflow files changed at random (lines deleted, repeated, swapped, re-indented, characters
 * replaced or inserted). It never throws: it answers a bundle, or diagnostics that each name a
 * place as `file:line:col: `, at least one of them an error when there is no bundle.
 */
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { compileProject } from "../../src/compiler/index.ts";
import { fcSettings, propTimeoutMs } from "./fc-settings.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const project = mkdtempSync(join(tmpdir(), "props-compiler-"));
cpSync(join(ROOT, "workflows"), project, { recursive: true });
const FILES = readdirSync(project).filter((f) => f.endsWith(".workflow.yaml"));
const ORIGINALS = new Map(FILES.map((f) => [f, readFileSync(join(project, f), "utf8")]));

afterAll(() => rmSync(project, { recursive: true, force: true }));

/** What YAML and workflow files are made of, to insert. */
const PIECES = [
  ":",
  "- ",
  "{",
  "}",
  "[",
  "]",
  '"',
  "'",
  "{{",
  "}}",
  "#",
  "&a",
  "*a",
  "!!str",
  "\t",
  "  ",
  "\n",
  "~",
  "null",
  "0x1F",
  "step.",
  "params.",
  "`1`",
  "|",
  ">",
  "%",
  "@",
  "…",
];

type Edit =
  | { op: "delete" | "repeat" | "indent" | "dedent"; line: number }
  | { op: "swap"; line: number; other: number }
  | { op: "replace" | "insert"; at: number; text: string };

const edit: fc.Arbitrary<Edit> = fc.oneof(
  fc.record({
    op: fc.constantFrom("delete" as const, "repeat" as const, "indent" as const, "dedent" as const),
    line: fc.nat(),
  }),
  fc.record({ op: fc.constant("swap" as const), line: fc.nat(), other: fc.nat() }),
  fc.record({
    op: fc.constantFrom("replace" as const, "insert" as const),
    at: fc.nat(),
    text: fc.oneof(fc.constantFrom(...PIECES), fc.string({ maxLength: 6 })),
  }),
);

function apply(text: string, e: Edit): string {
  const lines = text.split("\n");
  if (e.op === "replace" || e.op === "insert") {
    const at = e.at % (text.length + 1);
    return text.slice(0, at) + e.text + text.slice(e.op === "replace" ? at + e.text.length : at);
  }
  const i = (e as { line: number }).line % lines.length;
  const line = lines[i] as string;
  if (e.op === "delete") lines.splice(i, 1);
  if (e.op === "repeat") lines.splice(i, 0, line);
  if (e.op === "indent") lines[i] = `  ${line}`;
  if (e.op === "dedent") lines[i] = line.replace(/^ {1,2}/, "");
  if (e.op === "swap") {
    const j = e.other % lines.length;
    lines[i] = lines[j] as string;
    lines[j] = line;
  }
  return lines.join("\n");
}

const PLACED = /^[^\n:]+:\d+:\d+: /;

describe("the compiler on mutated example files", () => {
  it(
    "answers a bundle or placed diagnostics, never an exception",
    () => {
      fc.assert(
        fc.property(
          fc.constantFrom(...FILES),
          fc.array(edit, { minLength: 1, maxLength: 4 }),
          (file, edits) => {
            const original = ORIGINALS.get(file) as string;
            writeFileSync(join(project, file), edits.reduce(apply, original));
            try {
              const r = compileProject(project, { wranglerConfig: join(ROOT, "wrangler.toml") });
              for (const d of r.diagnostics) expect(d.text).toMatch(PLACED);
              if (!r.bundle) expect(r.diagnostics.some((d) => d.severity === "error")).toBe(true);
            } finally {
              writeFileSync(join(project, file), original);
            }
          },
        ),
        fcSettings(),
      );
    },
    propTimeoutMs(300),
  );
});
