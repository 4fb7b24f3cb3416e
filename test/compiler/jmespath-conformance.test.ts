/**
 * The compiler's expression check against the official JMESPath compliance suite
 * (test/conformance/jmespath, a copy of ../shared/conformance/jmespath): every case the suite marks as a syntax error must fail the
 * build, and every case with a result must pass it, so the build never rejects an expression the
 * runtime evaluates nor accepts one it cannot parse.
 */
import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { checkExpression } from "../../src/compiler/expressions.ts";

const dir = fileURLToPath(new URL("../conformance/jmespath", import.meta.url));

interface Suite {
  cases: Array<{ expression: string; result?: unknown; error?: string }>;
}

describe("JMESPath compliance suite through the compiler's expression check", () => {
  const files = readdirSync(dir).filter((f) => f.endsWith(".json"));
  it.each(files)("%s: syntax errors rejected, valid expressions accepted", (file) => {
    const suites = JSON.parse(readFileSync(`${dir}/${file}`, "utf8")) as Suite[];
    const wronglyAccepted: string[] = [];
    const wronglyRejected: string[] = [];
    for (const c of suites.flatMap((s) => s.cases)) {
      const ok = checkExpression(c.expression, []).ok;
      if (c.error === "syntax" && ok) wronglyAccepted.push(c.expression);
      if ("result" in c && !ok) wronglyRejected.push(c.expression);
    }
    expect({ wronglyAccepted, wronglyRejected }).toEqual({ wronglyAccepted: [], wronglyRejected: [] });
  });
});
