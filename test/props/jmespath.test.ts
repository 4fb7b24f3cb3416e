/**
 * The examples' JMESPath expressions (every condition, transform expression and `{{ }}` of the
 * compiled workflows/) evaluated by the engine (src/engine/expressions.ts) on random JSON shaped
 * like what they read: each gives a JSON value (finite numbers, plain objects and arrays) or the
 * step error `expression_error`, never another exception.
 */
import { fileURLToPath } from "node:url";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { Json } from "../../src/bundle.ts";
import { compileProject } from "../../src/compiler/index.ts";
import { evaluate } from "../../src/engine/expressions.ts";
import { StepError } from "../../src/engine/types.ts";
import { fcSettings, propTimeoutMs } from "./fc-settings.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const bundle = compileProject(`${ROOT}workflows`, { wranglerConfig: `${ROOT}wrangler.toml` }).bundle;

/** Every expression text in the bundle: `{t: "expr", e}` templates and parts, conditions, `expr`, `field`, `from`. */
function expressions(v: unknown, out = new Set<string>()): Set<string> {
  if (Array.isArray(v)) for (const x of v) expressions(x, out);
  else if (v && typeof v === "object")
    for (const [k, x] of Object.entries(v)) {
      if (typeof x === "string" && ["e", "expr", "condition", "field", "from"].includes(k)) out.add(x);
      else expressions(x, out);
    }
  return out;
}
const EXPRS = [...expressions(bundle)];

/** JSON whose objects often hold the names the expressions read. */
const names = fc.constantFrom(
  "params",
  "step",
  "env",
  "request",
  "item",
  "result",
  "status",
  "body",
  "name",
  "items",
  "qty",
  "headers",
  "output",
  "n",
);
const json: fc.Arbitrary<Json> = fc.letrec<{ value: Json }>((tie) => ({
  value: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    fc.jsonValue({ maxDepth: 1 }) as fc.Arbitrary<Json>,
    fc.dictionary(fc.oneof(names, fc.string({ maxLength: 4 })), tie("value"), { maxKeys: 5 }),
    fc.array(tie("value"), { maxLength: 4 }),
    fc.constantFrom<Json>(1e308, -1e308, Number.MAX_SAFE_INTEGER, "", [], {}),
  ),
})).value;

/** Whether `v` is what JSON can hold: finite numbers, strings, booleans, null, arrays, plain objects. */
function isJson(v: unknown): boolean {
  if (v === null || typeof v === "string" || typeof v === "boolean") return true;
  if (typeof v === "number") return Number.isFinite(v);
  if (Array.isArray(v)) return v.every(isJson);
  if (typeof v === "object")
    return Object.getPrototypeOf(v) === Object.prototype && Object.values(v).every(isJson);
  return false;
}

describe("the examples' expressions on random JSON", () => {
  it("has expressions to try", () => {
    expect(EXPRS.length).toBeGreaterThan(20);
  });

  it(
    "gives JSON or expression_error, never another exception",
    () => {
      fc.assert(
        fc.property(fc.constantFrom(...EXPRS), fc.dictionary(names, json, { maxKeys: 6 }), (expr, data) => {
          let out: unknown;
          try {
            out = evaluate(expr, data);
          } catch (e) {
            expect(e).toBeInstanceOf(StepError);
            expect((e as StepError).code).toBe("expression_error");
            return;
          }
          expect(isJson(out)).toBe(true);
        }),
        fcSettings(),
      );
    },
    propTimeoutMs(50),
  );
});
