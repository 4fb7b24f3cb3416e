/**
 * Templates and expressions that read a scope of their own (a chat request's `messages`, a finished
 * run's `output`, a scorer's `{output, params, step}`: docs/protocols.md, docs/file-format.md
 * "Scores"): an expression may read only the roots its field names; any other root is an error at
 * its line, never a value that silently reads null. Also what the protocol triggers refuse beside
 * them (a signature scheme, a file that is not invocable).
 */
import type { Template } from "../bundle.ts";
import { hint } from "../common/did-you-mean.ts";
import { checkExpression, rootPaths } from "./expressions.ts";
import { compileTemplate } from "./templates.ts";
import type { InvokeContext, Report } from "./triggers/invoke-context.ts";
import type { DataPath } from "./yaml-source.ts";

/** Compiles `value` at `path`, whose expressions read only `roots` (`step.<id>` must name a step). */
export function scopedTemplate(
  value: unknown,
  path: DataPath,
  where: string,
  roots: readonly string[],
  ctx: Pick<InvokeContext, "stepIds">,
  err: Report,
): Template {
  const allowed = roots.map((r) => `\`${r}\``).join(", ");
  return compileTemplate(value, path, {
    expr: (e, p) => scopedExpression(e, p, `${where}: \`{{ ${e} }}\``, where, roots, ctx, err, allowed),
    malformed: (msg, p) => err(p, `${where}: ${msg}`),
  });
}

/** Checks one bare expression that reads only `roots`; its bundle text, or null when it is wrong. */
export function scopedExpression(
  e: string,
  p: DataPath,
  what: string,
  where: string,
  roots: readonly string[],
  ctx: Pick<InvokeContext, "stepIds">,
  err: Report,
  allowed = roots.map((r) => `\`${r}\``).join(", "),
): string | null {
  const c = checkExpression(e, ctx.stepIds);
  if (!c.ok) {
    err(p, `${what}: invalid JMESPath: ${c.error}`);
    return null;
  }
  for (const read of rootPaths(c.ast)) {
    const root = read[0] as string;
    if (!roots.includes(root)) {
      err(p, `${where} may read only ${allowed}, not \`${root}\`${hint(root, roots)}`);
      continue;
    }
    if (root === "step" && read[1] !== undefined && !ctx.stepIds.has(read[1])) {
      err(p, `${where}: \`step.${read[1]}\` is not a step of this pipeline${hint(read[1], ctx.stepIds)}`);
    }
  }
  return c.text;
}

/** What a protocol trigger may not be combined with: a signature scheme (its callers cannot sign). */
export function refuseSignature(
  field: string,
  auth: { scheme: string } | null,
  err: Report,
  what: string,
): boolean {
  if (!auth || auth.scheme === "bearer" || auth.scheme === "raw") return false;
  err(
    ["invoke", field],
    `\`invoke.${field}\` needs \`invoke.auth\` with a credential header (\`bearer\` or \`raw\`), or none: ${what} cannot sign requests with \`${auth.scheme}\``,
    "key",
  );
  return true;
}

/** Reports `invoke.<field>` on a file that is not an invocable workflow. */
export function refuseNotInvocable(
  field: string,
  ctx: Pick<InvokeContext, "invocable">,
  err: Report,
): boolean {
  if (ctx.invocable) return false;
  err(
    ["invoke", field],
    `\`invoke.${field}\` is for invocable workflows (files directly in workflows/ named *.workflow.yaml)`,
    "key",
  );
  return true;
}
