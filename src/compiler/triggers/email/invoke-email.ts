/**
 * Compiles `invoke.email` (docs/triggers.md, "Email"): the recipient patterns (`to`, at least
 * one) whose mail starts a run of this workflow, and the senders it accepts (`from`, default any),
 * each an address pattern (src/common/email-address.ts). Root workflows only; that no two
 * workflows take one address is checked across the project (trigger-owners.ts). Email Routing is
 * set up in the dashboard, so wrangler.toml needs nothing.
 */
import type { CompiledEmail } from "../../../bundle.ts";
import { patternProblem } from "../../../common/email-address.ts";
import { isObject } from "../../../common/guards.ts";
import type { InvokeContext, Report } from "../invoke-context.ts";

export function compileEmail(
  invoke: Record<string, unknown>,
  ctx: InvokeContext,
  err: Report,
): CompiledEmail | null {
  const email = invoke.email;
  if (!isObject(email)) return null;
  if (!ctx.invocable) {
    err(
      ["invoke", "email"],
      "`invoke.email` is for invocable workflows (files directly in workflows/ named *.workflow.yaml)",
      "key",
    );
    return null;
  }
  const patterns = (field: "to" | "from"): string[] | null => {
    const list = email[field];
    if (!Array.isArray(list)) return null;
    if (list.length === 0) err(["invoke", "email", field], `\`invoke.email.${field}\` lists no address`);
    const out: string[] = [];
    list.forEach((p, i) => {
      if (typeof p !== "string") return;
      const problem = patternProblem(p);
      if (problem) err(["invoke", "email", field, i], `address pattern \`${p}\`: ${problem}`);
      else if (out.includes(p.toLowerCase()))
        err(["invoke", "email", field, i], `address pattern \`${p}\` is listed twice`);
      else out.push(p.toLowerCase());
    });
    return out;
  };
  const to = patterns("to");
  if (to === null) {
    err(["invoke", "email"], "`invoke.email` needs `to`: the addresses whose mail starts a run", "key");
    return null;
  }
  return { to, from: patterns("from") };
}
