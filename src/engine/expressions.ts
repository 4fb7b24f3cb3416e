/**
 * JMESPath evaluation for `condition`, transform `expr`/`field` and `{{ }}`. The compiler has
 * already checked the syntax and quoted hyphenated step ids, so here an expression is parsed
 * once per distinct text (a bundle has a fixed, small set) and every failure to evaluate,
 * whatever the library throws, becomes one StepError code: `expression_error`.
 */
import { compile, TreeInterpreter } from "@jmespath-community/jmespath";
import type { Json } from "../bundle.ts";
import { StepError } from "./types.ts";

type Ast = ReturnType<typeof compile>;

/** Bounded only by the bundle: every expression text comes from a compiled workflow. */
const compiled = new Map<string, Ast>();

function astOf(expr: string): Ast {
  let ast = compiled.get(expr);
  if (!ast) {
    ast = compile(expr);
    compiled.set(expr, ast);
  }
  return ast;
}

function describe(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** Evaluates `expr` against `data`; any failure is StepError("expression_error"). */
export function evaluate(expr: string, data: Json): Json {
  let ast: Ast;
  try {
    ast = astOf(expr);
  } catch (err) {
    throw new StepError("expression_error", `invalid expression \`${expr}\`: ${describe(err)}`);
  }
  try {
    // The interpreter is shared module state, but evaluation is synchronous, so runs cannot interleave.
    const result = TreeInterpreter.search(ast, data) as Json | undefined;
    return result === undefined ? null : result;
  } catch (err) {
    throw new StepError("expression_error", `cannot evaluate \`${expr}\`: ${describe(err)}`);
  }
}

/** JMESPath truthiness: false, null, "", [] and {} are false; everything else (0 too) is true. */
export function isTruthy(v: Json): boolean {
  if (v === null || v === false || v === "") return false;
  if (Array.isArray(v)) return v.length > 0;
  if (typeof v === "object") return Object.keys(v).length > 0;
  return true;
}
