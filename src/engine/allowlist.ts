/**
 * Allowlist rules of an agent's tool servers (docs/agents-and-tools.md), shared by the tool loop (what the model is
 * offered, which calls wait for a human) and the compiler of test files (which tool mocks and
 * approval decisions can ever be used). Pure: no Worker APIs.
 */
import type { CompiledAllowEntry } from "../bundle.ts";

/** Whether an allowlist pattern (`name`, `prefix*`, `*`) admits `tool`. */
export function patternMatches(pattern: string, tool: string): boolean {
  if (pattern === "*") return true;
  if (pattern.endsWith("*")) return tool.startsWith(pattern.slice(0, -1));
  return pattern === tool;
}

/**
 * The allowlist entry that governs `tool`, or undefined when none admits it. An entry that asks
 * for approval wins over one that does not (the safer reading), then the most specific one.
 */
export function governingEntry(
  allow: CompiledAllowEntry[] | null,
  tool: string,
): CompiledAllowEntry | undefined {
  if (allow === null) return { pattern: "*", approval: null };
  const matching = allow.filter((e) => patternMatches(e.pattern, tool));
  const specificity = (e: CompiledAllowEntry) => (e.pattern.endsWith("*") ? e.pattern.length - 1 : 1e9);
  return matching.sort(
    (a, b) => Number(b.approval !== null) - Number(a.approval !== null) || specificity(b) - specificity(a),
  )[0];
}

/** The exact tool names an allowlist lists (patterns with `*` name none). */
export function exactNames(allow: CompiledAllowEntry[] | null): string[] {
  return (allow ?? []).map((e) => e.pattern).filter((p) => !p.endsWith("*"));
}

/**
 * The server of `refs` that serves `tool` when the model calls it by its plain name: the first
 * whose allowlist names it exactly, else the first whose allowlist admits it; undefined when none
 * does (the call is refused, `tool_not_permitted`).
 */
export function serverFor<R extends { allow: CompiledAllowEntry[] | null }>(
  refs: readonly R[],
  tool: string,
): R | undefined {
  return (
    refs.find((r) => exactNames(r.allow).includes(tool)) ??
    refs.find((r) => governingEntry(r.allow, tool) !== undefined)
  );
}
