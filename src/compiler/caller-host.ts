/**
 * Where a URL's host comes from, and which env vars a value reads: the two facts behind the rule
 * that a secret is never sent to a host the caller picks (docs/file-format.md for webhooks; the
 * tool-server counterpart is in server-hosts.ts). A host from a literal or an env var is the
 * operator's; a host from `params`, a step output or the request is the caller's.
 */
import type { Template } from "../bundle.ts";
import { type RootReads, rootReads } from "./expression-reads.ts";
import { checkExpression } from "./expressions.ts";
import { templateExprs } from "./templates.ts";

/** What an expression reads; one that does not parse counts as reading everything. */
function readsOfExpr(e: string): RootReads {
  // Stryker disable next-line ArrayDeclaration: a compiled template's step ids are quoted already
  const c = checkExpression(e, []);
  // Stryker disable next-line ArrayDeclaration: `whole` decides before any path is looked at
  return c.ok ? rootReads(c.ast) : { paths: [], whole: true };
}

/**
 * The secret env vars of `secrets` a template can read, sorted: every one of them when it reads
 * `env` as a whole (`{{ env }}`, `values(env)`, `env.*`, `env | NAME`) or the whole scope (`@`,
 * `$`, `values(@)`), or cannot be read by the checker.
 */
export function secretReads(t: Template | null, secrets: ReadonlySet<string>): string[] {
  // Stryker disable next-line ConditionalExpression: with no secret there is none to name either way
  if (!t || secrets.size === 0) return [];
  const out = new Set<string>();
  for (const e of templateExprs(t)) {
    const r = readsOfExpr(e);
    if (r.whole) return [...secrets].sort();
    for (const p of r.paths) {
      if (p[0] !== "env") continue;
      if (p[1] === undefined) return [...secrets].sort();
      if (secrets.has(p[1])) out.add(p[1]);
    }
  }
  return [...out].sort();
}

/**
 * Where caller-controlled data an expression reads comes from (`params.url`, `step.x`, `@` for
 * the whole scope), or null when it reads only env and literals.
 */
function callerData(e: string): string | null {
  const r = readsOfExpr(e);
  if (r.whole) return "@";
  for (const p of r.paths) if (p[0] !== "env") return p.slice(0, 2).join(".");
  return null;
}

/**
 * What comes before a URL's authority: spaces and C0 controls (the URL parser skips them), a
 * scheme, and any run of `/` and `\`. Every part is optional, so it always matches at the start
 * (no `^` needed); written as a string because a regex literal may not hold control characters.
 */
// biome-ignore lint/complexity/useRegexLiterals: a literal may not hold control characters
const BEFORE_AUTHORITY = new RegExp("[\\u0001-\\u0020]*(?:[a-z][a-z0-9+.-]*:)?[/\\\\]*", "i");

/** `params.x` / `step.y` / `@` when the url's host part can come from caller-controlled data, else null. */
export function hostSource(url: Template): string | null {
  if (url.t === "expr") return callerData(url.e);
  if (url.t !== "concat") return null;
  let acc = "";
  for (const part of url.parts) {
    if (typeof part === "string") {
      acc += part;
      continue;
    }
    // The authority ends at the first `/`, `\`, `?` or `#` after the scheme and the slashes that
    // follow it, read as the URL parser reads it: tabs and newlines dropped anywhere, spaces and
    // controls before the scheme skipped, and `https:x`, `https:/x`, `https:\\x` and `https:///x`
    // all have the host x.
    // Stryker disable next-line StringLiteral: what would replace it has no `/`, `\`, `?` or `#` either
    const rest = acc.replace(/[\t\n\r]/g, "").replace(BEFORE_AUTHORITY, "");
    if (!/[/\\?#]/.test(rest)) {
      const src = callerData(part.e);
      if (src) return src;
    }
    acc += "\u0000";
  }
  return null;
}

/**
 * How to name where the host of `url` (a value of a step) comes from when the caller picks it,
 * e.g. `` `params.url` ``, else null. `forEachFrom` is the step's `for_each.from` (bare JMESPath):
 * an item is caller data only when `from` reads some (a list of URLs in env is not).
 */
export function callerHost(url: Template, forEachFrom: string | null): string | null {
  const tainted = hostSource(url);
  if (tainted === null) return null;
  if (!/^item(_index)?(\.|$)/.test(tainted)) return `\`${tainted}\``;
  const fromSource = forEachFrom === null ? null : hostSource({ t: "expr", e: forEachFrom });
  return fromSource === null ? null : `\`${tainted}\` (items of \`${fromSource}\`)`;
}
