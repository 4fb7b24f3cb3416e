/**
 * Build-time handling of JMESPath: quoting hyphenated step ids, syntax checking with the same
 * library the runtime evaluates with, and reading which `step.X` / `env.X` paths an expression
 * reads (from the syntax tree, so `'step.x'` in a string literal or `items[?step]` over an item
 * are not mistaken for references).
 */
import { compile, getRegisteredFunctions, isRegistered } from "@jmespath-community/jmespath";
import { hint } from "../common/did-you-mean.ts";

export type AstNode = { type: string; [k: string]: unknown };

const PLAIN_IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * Rewrites `step.<id>` to `step."<id>"` for every id that is not a plain identifier (JMESPath
 * reads `step.post-result` as `step.post - result`). Longest ids first so `post-result` wins over
 * `post`; text inside '…', "…" and `…` literals is left alone. `root` rewrites another name the same
 * way (`requests.<id>` in a test's `assert`).
 */
export function quoteStepIds(expr: string, stepIds: Iterable<string>, root = "step"): string {
  const ids = [...stepIds].filter((id) => !PLAIN_IDENTIFIER.test(id)).sort((a, b) => b.length - a.length);
  const prefix = `${root}.`;
  if (ids.length === 0 || !expr.includes(prefix)) return expr;
  return rewriteOutsideLiterals(expr, (i) => {
    if (!expr.startsWith(prefix, i) || isIdentChar(expr[i - 1]) || expr[i - 1] === ".") return null;
    const rest = expr.slice(i + prefix.length);
    const id = ids.find((x) => rest.startsWith(x) && !isIdentChar(rest[x.length]) && rest[x.length] !== "-");
    return id === undefined
      ? null
      : { text: `${prefix}${JSON.stringify(id)}`, length: prefix.length + id.length };
  });
}

/**
 * Copies `expr`, leaving text inside '…', "…" and `…` literals alone; elsewhere `at(i)` may
 * replace what starts at `i` (its `length` characters) with `text`.
 */
function rewriteOutsideLiterals(
  expr: string,
  at: (i: number) => { text: string; length: number } | null,
): string {
  let out = "";
  let i = 0;
  while (i < expr.length) {
    const ch = expr[i] as string;
    if (ch === "'" || ch === '"' || ch === "`") {
      const end = literalEnd(expr, i);
      out += expr.slice(i, end);
      i = end;
      continue;
    }
    const r = at(i);
    if (r) {
      out += r.text;
      i += r.length;
      continue;
    }
    out += ch;
    i++;
  }
  return out;
}

function literalEnd(s: string, start: number): number {
  const quote = s[start];
  let i = start + 1;
  while (i < s.length) {
    if (s[i] === "\\") i += 2;
    else if (s[i] === quote) return i + 1;
    else i++;
  }
  return s.length;
}

function isIdentChar(c: string | undefined): boolean {
  return c !== undefined && /[A-Za-z0-9_]/.test(c);
}

export type CheckedExpression =
  | { ok: true; text: string; ast: AstNode }
  | { ok: false; text: string; error: string };

const HYPHENATED = /^[A-Za-z_][A-Za-z0-9_]*(?:-[A-Za-z0-9_]+)+/;

/**
 * Quotes bare hyphenated identifiers (`params.user-id` -> `params."user-id"`, `created-at` ->
 * `"created-at"`), as ktsu does before evaluating: a name with a hyphen is a field, never a
 * subtraction. Arithmetic is still written with spaces (`a - b`); text inside '…', "…" and `…`
 * literals and `$variables` are left alone.
 */
export function quoteHyphenated(expr: string): string {
  if (!expr.includes("-")) return expr;
  return rewriteOutsideLiterals(expr, (i) => {
    const prev = expr[i - 1];
    if (isIdentChar(prev) || prev === "$") return null;
    const m = HYPHENATED.exec(expr.slice(i));
    return m ? { text: JSON.stringify(m[0]), length: m[0].length } : null;
  });
}

/** Quotes step ids and other hyphenated names, then parses. `text` is what goes into the bundle. */
export function checkExpression(expr: string, stepIds: Iterable<string>): CheckedExpression {
  const text = quoteHyphenated(quoteStepIds(expr, stepIds));
  let ast: AstNode;
  try {
    ast = compile(text) as unknown as AstNode;
  } catch (e) {
    return { ok: false, text, error: e instanceof Error ? e.message : String(e) };
  }
  // The parser takes any name as a function: one the runtime does not have would fail every run.
  const unknown = unknownFunction(ast);
  if (unknown !== null)
    return {
      ok: false,
      text,
      error: `unknown function ${unknown}()${hint(unknown, getRegisteredFunctions())}`,
    };
  return { ok: true, text, ast };
}

/** The first function the expression calls that JMESPath does not have (null: none). */
function unknownFunction(node: unknown): string | null {
  if (Array.isArray(node)) {
    for (const c of node) {
      const found = unknownFunction(c);
      if (found !== null) return found;
    }
    return null;
  }
  if (!node || typeof node !== "object") return null;
  const n = node as AstNode;
  if (n.type === "Function" && typeof n.name === "string" && !isRegistered(n.name)) return n.name;
  // A literal's JSON is data, not syntax.
  if (n.type === "Literal") return null;
  for (const v of Object.values(n)) {
    const found = unknownFunction(v);
    if (found !== null) return found;
  }
  return null;
}

/**
 * Every static field path read from the root of the evaluation context, e.g.
 * `step."post-result".body.id` -> ["step", "post-result", "body", "id"]. Paths evaluated against
 * something else (the right of a pipe or projection, an `&expr` argument) are not roots.
 */
export function rootPaths(ast: AstNode): string[][] {
  const out: string[][] = [];
  walk(ast, true, out);
  return out;
}

function walk(node: AstNode | undefined, atRoot: boolean, out: string[][]): void {
  if (!node || typeof node !== "object") return;
  const child = (k: string) => node[k] as AstNode | undefined;
  switch (node.type) {
    case "Field":
    case "Root":
    case "Subexpression":
    case "IndexExpression": {
      const path = chainPath(node, atRoot);
      if (path && path.length > 0) out.push(path);
      walkChain(node, atRoot, out);
      return;
    }
    case "Projection":
    case "ValueProjection":
    case "Pipe":
      walk(child("left"), atRoot, out);
      walk(child("right"), false, out);
      return;
    case "FilterProjection":
      walk(child("left"), atRoot, out);
      walk(child("right"), false, out);
      walk(child("condition"), false, out);
      return;
    case "ExpressionReference":
      walk(child("child"), false, out);
      return;
    default:
      for (const v of Object.values(node)) {
        if (Array.isArray(v)) for (const c of v) walk(c as AstNode, atRoot, out);
        else if (v && typeof v === "object" && "type" in v) walk(v as AstNode, atRoot, out);
      }
  }
}

/** Walks what hangs off a chain (an index's filter, a function on the left) without re-reporting its prefixes. */
function walkChain(node: AstNode, atRoot: boolean, out: string[][]): void {
  if (node.type === "Field" || node.type === "Root") return;
  if (node.type !== "Subexpression" && node.type !== "IndexExpression") {
    walk(node, atRoot, out);
    return;
  }
  walkChain(node.left as AstNode, atRoot, out);
  walk(node.right as AstNode, false, out);
}

/**
 * The field names of a `a.b.c` chain that starts at the root, else null. An index or slice ends
 * the static part: `step.x.items[0].id` reads ["step", "x", "items"] (what follows is per item).
 */
function chainPath(node: AstNode, atRoot: boolean): string[] | null {
  return chain(node, atRoot)?.path ?? null;
}

function chain(node: AstNode, atRoot: boolean): { path: string[]; open: boolean } | null {
  switch (node.type) {
    case "Field":
      return atRoot ? { path: [node.name as string], open: true } : null;
    case "Root":
      return { path: [], open: true };
    case "Subexpression": {
      const left = chain(node.left as AstNode, atRoot);
      if (!left?.open) return left;
      const right = node.right as AstNode;
      if (right.type === "Field") return { path: [...left.path, right.name as string], open: true };
      // `x.items[0]`, `x.items[*].id`, `x.items[]`: the field before the index still counts.
      const inner = (right.left ?? right.child) as AstNode | undefined;
      if (inner?.type === "Field") return { path: [...left.path, inner.name as string], open: false };
      return { path: left.path, open: false };
    }
    case "IndexExpression": {
      const left = chain(node.left as AstNode, atRoot);
      return left ? { path: left.path, open: false } : null;
    }
    default:
      return null;
  }
}
