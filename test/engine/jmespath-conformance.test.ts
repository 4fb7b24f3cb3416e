/**
 * Every `condition`, transform `expr` and `{{ }}` is JMESPath, so workflow authors rely on the
 * reference behaviour. This runs the official compliance suite (test/conformance/jmespath, a copy of ../shared/conformance/jmespath,
 * read at test time) through `evaluate`, the path workflows use: each case with a `result`
 * must give it, each case with a run-time `error` must fail the step with expression_error.
 * Syntax-error cases belong to the compiler, which rejects them at build time.
 */
import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import type { Json } from "../../src/bundle.ts";
import { evaluate } from "../../src/engine/expressions.ts";
import { StepError } from "../../src/engine/types.ts";

const SUITE_DIR = fileURLToPath(new URL("../conformance/jmespath/", import.meta.url));

interface Case {
  expression: string;
  result?: Json;
  error?: string;
}
interface Suite {
  given: Json;
  cases: Case[];
}
interface Row {
  name: string;
  given: Json;
  case: Case;
}

/**
 * Cases where @jmespath-community/jmespath deliberately follows the JMESPath Community spec
 * instead of the original suite. Listed by name so they are expected failures, not skips:
 * if the library ever matches the reference, the test tells us to drop the entry.
 */
const KNOWN_DIFFERENCES: Record<string, string> = {
  "literal.json #2.12 '\\\\'":
    "JMESPath Community (JEP-12a) makes `\\\\` an escape inside raw strings, so `'\\\\'` is one backslash; the original spec keeps both",
};

function load(): Row[] {
  const rows: Row[] = [];
  for (const file of readdirSync(SUITE_DIR)
    .filter((f) => f.endsWith(".json"))
    .sort()) {
    const suites = JSON.parse(readFileSync(`${SUITE_DIR}${file}`, "utf8")) as Suite[];
    suites.forEach((suite, si) => {
      suite.cases.forEach((c, ci) => {
        rows.push({ name: `${file} #${si}.${ci} ${c.expression}`, given: suite.given, case: c });
      });
    });
  }
  return rows;
}

const rows = load();
const withResult = rows.filter((r) => "result" in r.case);
const runtimeErrors = rows.filter((r) => r.case.error !== undefined && r.case.error !== "syntax");
const expected = withResult.filter((r) => !(r.name in KNOWN_DIFFERENCES));
const knownFailures = withResult.filter((r) => r.name in KNOWN_DIFFERENCES);

describe("JMESPath compliance suite", () => {
  it("finds the suite with its result and error cases", () => {
    expect(withResult.length).toBeGreaterThan(700);
    expect(runtimeErrors.length).toBeGreaterThan(40);
  });

  it("lists only known differences that exist in the suite", () => {
    expect(knownFailures.map((r) => r.name).sort()).toEqual(Object.keys(KNOWN_DIFFERENCES).sort());
  });

  describe("gives the reference result", () => {
    it.each(expected.map((r) => [r.name, r] as const))("%s", (_name, row) => {
      expect(evaluate(row.case.expression, row.given)).toEqual(row.case.result);
    });
  });

  describe("known difference from the reference (it.fails: passes while the library differs)", () => {
    for (const row of knownFailures) {
      it.fails(`${row.name}: ${KNOWN_DIFFERENCES[row.name]}`, () => {
        expect(evaluate(row.case.expression, row.given)).toEqual(row.case.result);
      });
    }
  });

  describe("fails the step with expression_error on a run-time error", () => {
    it.each(runtimeErrors.map((r) => [`${r.name} (${r.case.error})`, r] as const))("%s", (_name, row) => {
      let thrown: unknown;
      try {
        evaluate(row.case.expression, row.given);
      } catch (err) {
        thrown = err;
      }
      expect(thrown).toBeInstanceOf(StepError);
      expect((thrown as StepError).code).toBe("expression_error");
    });
  });
});
