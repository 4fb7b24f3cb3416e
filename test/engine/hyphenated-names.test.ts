/**
 * docs/file-format.md "Expressions" (build side): bare hyphenated names are quoted as ktsu
 * does (one field, not a subtraction), and a transform `sort` / `deduplicate` field is checked at
 * build time like any other expression instead of failing the run.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { quoteHyphenated } from "../../src/compiler/expressions.ts";
import { compileProject } from "../../src/compiler/index.ts";

describe("quoteHyphenated", () => {
  it("quotes bare hyphenated names wherever they stand", () => {
    expect(quoteHyphenated("params.user-id")).toBe('params."user-id"');
    expect(quoteHyphenated("items[?is-active].created-at")).toBe('items[?"is-active"]."created-at"');
    expect(quoteHyphenated("{id: user-id}")).toBe('{id: "user-id"}');
  });

  it("leaves arithmetic with spaces, literals, indexes and variables alone", () => {
    for (const e of ["a - b", "'a-b'", '"a-b"', '`"a-b"`', "length(a)-1", "items[-1]", "$x-y"]) {
      expect(quoteHyphenated(e)).toBe(e);
    }
  });
});

describe("transform sort and deduplicate fields at build time", () => {
  const dir = mkdtempSync(join(tmpdir(), "hyphen-names-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("reports an unparsable field as a build error at its line", () => {
    mkdirSync(join(dir, "workflows"), { recursive: true });
    writeFileSync(
      join(dir, "workflows", "t.workflow.yaml"),
      [
        "kind: workflow",
        "name: t",
        "pipeline:",
        "  - id: s",
        "    transform:",
        "      ops:",
        "        - sort: { field: 'price[' }",
        "        - deduplicate: { field: created-at }",
        "params:",
        "  schema: { type: object }",
      ].join("\n"),
    );
    const r = compileProject(join(dir, "workflows"));
    const errors = r.diagnostics.filter((d) => d.severity === "error").map((d) => d.text);
    expect(errors, errors.join("\n")).toHaveLength(1);
    expect(errors[0]).toMatch(/t\.workflow\.yaml:7:\d+: .*invalid JMESPath in `sort\.field`/);
  });
});
