/**
 * Where a URL's host comes from, and which env vars a value reads: the two facts behind the rule
 * that a secret is never sent to a host the caller picks (docs/file-format.md for webhooks; the
 * tool-server counterpart is in server-hosts.ts). A host from a literal or an env var is the
 * operator's; a host from `params`, a step output or the request is the caller's.
 */
import type { Template } from "../bundle.ts";
import { checkExpression, rootPaths } from "./expressions.ts";
import { templateExprs } from "./templates.ts";

/** Names of the env vars a template reads. */
export function envReads(t: Template | null): string[] {
  if (!t) return [];
  const out: string[] = [];
  for (const e of templateExprs(t)) {
    const c = checkExpression(e, []);
    if (!c.ok) continue;
    for (const p of rootPaths(c.ast)) if (p[0] === "env" && p[1]) out.push(p[1]);
  }
  return out;
}

/** `params.x` / `step.y` when the url's host part comes from caller-controlled data, else null. */
export function hostSource(url: Template): string | null {
  const callerData = (e: string): string | null => {
    const c = checkExpression(e, []);
    if (!c.ok) return null;
    for (const p of rootPaths(c.ast)) if (p[0] !== "env") return p.slice(0, 2).join(".") || "$";
    return null;
  };
  if (url.t === "expr") return callerData(url.e);
  if (url.t !== "concat") return null;
  let acc = "";
  for (const part of url.parts) {
    if (typeof part === "string") {
      acc += part;
      continue;
    }
    // The authority ends at the first `/`, `?` or `#` after the scheme.
    const rest = acc.replace(/^[a-z][a-z0-9+.-]*:\/\//i, "");
    if (!/[/?#]/.test(rest)) {
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
