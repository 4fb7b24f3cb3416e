/**
 * Turns YAML values that contain `{{ expr }}` into the pre-parsed `Template` of the bundle, so the
 * runtime never scans strings. Each expression found is handed to a callback that checks it (and
 * may rewrite it, e.g. quoting step ids); the returned text is what the bundle keeps.
 */
import type { Json, Template } from "../bundle.ts";
import type { DataPath } from "./yaml-source.ts";

export type Segment = { text: string } | { expr: string };

/** Splits `a {{ x }} b` into text and expression segments; throws a message on a malformed `{{`. */
export function splitTemplate(s: string): Segment[] {
  const out: Segment[] = [];
  let i = 0;
  while (i < s.length) {
    const open = s.indexOf("{{", i);
    if (open < 0) {
      out.push({ text: s.slice(i) });
      break;
    }
    if (open > i) out.push({ text: s.slice(i, open) });
    const close = findClose(s, open + 2);
    if (close < 0) throw new Error("`{{` without a closing `}}`");
    const expr = s.slice(open + 2, close).trim();
    if (expr === "") throw new Error("empty `{{ }}`");
    out.push({ expr });
    i = close + 2;
  }
  return out;
}

/** Index of the `}}` that closes an expression starting at `from`, skipping literals and `{…}`. */
function findClose(s: string, from: number): number {
  let depth = 0;
  let i = from;
  while (i < s.length) {
    const c = s[i];
    if (c === "'" || c === '"' || c === "`") {
      i++;
      while (i < s.length && s[i] !== c) i += s[i] === "\\" ? 2 : 1;
      i++;
      continue;
    }
    if (c === "{") depth++;
    else if (c === "}") {
      if (depth === 0 && s[i + 1] === "}") return i;
      if (depth > 0) depth--;
    }
    i++;
  }
  return -1;
}

export function hasTemplate(v: unknown): boolean {
  if (typeof v === "string") return v.includes("{{");
  if (Array.isArray(v)) return v.some(hasTemplate);
  if (v && typeof v === "object") return Object.values(v).some(hasTemplate);
  return false;
}

export interface TemplateHooks {
  /** Checks one expression found at `path`; returns the text to keep (null: it was invalid). */
  expr(expr: string, path: DataPath): string | null;
  /** Reports a malformed template string at `path`. */
  malformed(message: string, path: DataPath): void;
  /** In a webhook url: expressions after the first literal `?` are percent-encoded. */
  encodeAfterQuery?: boolean;
}

/** Compiles any JSON value; subtrees without `{{` collapse into one `lit`. */
export function compileTemplate(v: unknown, path: DataPath, hooks: TemplateHooks): Template {
  if (!hasTemplate(v)) return { t: "lit", v: (v ?? null) as Json };
  if (typeof v === "string") return compileString(v, path, hooks);
  if (Array.isArray(v)) return { t: "arr", items: v.map((x, i) => compileTemplate(x, [...path, i], hooks)) };
  const entries: Array<[string, Template]> = Object.entries(v as Record<string, unknown>).map(([k, x]) => [
    k,
    compileTemplate(x, [...path, k], hooks),
  ]);
  return { t: "obj", entries };
}

function compileString(s: string, path: DataPath, hooks: TemplateHooks): Template {
  let segments: Segment[];
  try {
    segments = splitTemplate(s);
  } catch (e) {
    hooks.malformed((e as Error).message, path);
    return { t: "lit", v: s };
  }
  const exprs = segments.filter((x): x is { expr: string } => "expr" in x);
  const whole = segments.filter((x) => !("text" in x && x.text.trim() === ""));
  if (exprs.length === 1 && whole.length === 1) {
    const e = hooks.expr((exprs[0] as { expr: string }).expr, path);
    return { t: "expr", e: e ?? "" };
  }
  const parts: Array<string | { e: string; encode?: true }> = [];
  let afterQuery = false;
  for (const seg of segments) {
    if ("text" in seg) {
      if (hooks.encodeAfterQuery && seg.text.includes("?")) afterQuery = true;
      const last = parts[parts.length - 1];
      if (typeof last === "string") parts[parts.length - 1] = last + seg.text;
      else parts.push(seg.text);
    } else {
      const e = hooks.expr(seg.expr, path) ?? "";
      parts.push(afterQuery ? { e, encode: true } : { e });
    }
  }
  return { t: "concat", parts };
}

/** Every expression of a compiled template, for reference checks after compilation. */
export function templateExprs(t: Template): string[] {
  switch (t.t) {
    case "lit":
      return [];
    case "expr":
      return [t.e];
    case "concat":
      return t.parts.flatMap((p) => (typeof p === "string" ? [] : [p.e]));
    case "arr":
      return t.items.flatMap(templateExprs);
    case "obj":
      return t.entries.flatMap(([, x]) => templateExprs(x));
  }
}
