/**
 * Compiles `invoke.a2a` (docs/a2a.md): the workflow served as its own A2A agent at `/a2a/{name}`,
 * with the skill its Agent Card lists (`name`, `description` (default the workflow's), `tags`,
 * `examples`) and `params` templates over the message (`text`, `data`, `message`, `metadata`;
 * default: the message's data part, else `{text}`). Root workflows only, and never with a signature
 * scheme (an agent that hires another sends a key; it signs nothing). A task's context is listed
 * with the run (the search key `a2a_context`), so `ListTasks` can filter on it.
 */
import type { CompiledA2a, CompiledAuth, Template } from "../../../bundle.ts";
import { isObject } from "../../../common/guards.ts";
import { refuseNotInvocable, refuseSignature, scopedTemplate } from "../../scoped-templates.ts";
import type { InvokeContext, Report } from "../invoke-context.ts";

export const A2A_PARAMS_ROOTS = ["text", "data", "message", "metadata"] as const;
/** The search key a task's context id is listed under. */
export const A2A_CONTEXT_KEY = "a2a_context";
/** What the listing renders it from (the trigger records `request.a2a.context_id`). */
export const A2A_CONTEXT_TEMPLATE: Template = { t: "expr", e: "request.a2a.context_id" };

export function compileA2a(
  invoke: Record<string, unknown>,
  auth: CompiledAuth | null,
  description: string | null,
  ctx: InvokeContext,
  err: Report,
): CompiledA2a | null {
  const block = invoke.a2a;
  if (!isObject(block)) return null;
  if (refuseNotInvocable("a2a", ctx, err) || refuseSignature("a2a", auth, err, "an A2A client")) return null;
  const skill = isObject(block.skill) ? block.skill : {};
  const strings = (v: unknown) =>
    Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : [];
  return {
    skill: {
      name: typeof skill.name === "string" ? skill.name : ctx.name,
      description: typeof skill.description === "string" ? skill.description : (description ?? ctx.name),
      tags: strings(skill.tags),
      examples: strings(skill.examples),
    },
    params:
      block.params === undefined
        ? null
        : scopedTemplate(
            block.params,
            ["invoke", "a2a", "params"],
            "`invoke.a2a.params`",
            A2A_PARAMS_ROOTS,
            ctx,
            err,
          ),
  };
}
