/**
 * Compiles `invoke.chat` (docs/protocols.md, "OpenAI-compatible endpoint"): `params`, templates
 * over the chat request (`messages`, `user`, `metadata`) that make the run's params, and `reply`,
 * a template over the finished run (`output`, `step`, `params`) that makes the assistant's text.
 * Root workflows only, and never with a signature scheme (a chat client sends a key, it signs
 * nothing). Once the whole project is compiled, `chatStreamField` decides whether the reply can
 * be sent as the model writes it.
 */
import { compile } from "@jmespath-community/jmespath";
import {
  type Bundle,
  type CompiledAuth,
  type CompiledChat,
  type CompiledWorkflow,
  isFanOut,
} from "../../../bundle.ts";
import { isObject } from "../../../common/guards.ts";
import type { AstNode } from "../../expressions.ts";
import { refuseNotInvocable, refuseSignature, scopedTemplate } from "../../scoped-templates.ts";
import type { InvokeContext, Report } from "../invoke-context.ts";

export const CHAT_PARAMS_ROOTS = ["messages", "user", "metadata"] as const;
export const CHAT_REPLY_ROOTS = ["output", "step", "params"] as const;

export function compileChat(
  invoke: Record<string, unknown>,
  auth: CompiledAuth | null,
  ctx: InvokeContext,
  err: Report,
): CompiledChat | null {
  const block = invoke.chat;
  if (!isObject(block)) return null;
  if (refuseNotInvocable("chat", ctx, err) || refuseSignature("chat", auth, err, "a chat client"))
    return null;
  const params =
    block.params === undefined
      ? null
      : scopedTemplate(
          block.params,
          ["invoke", "chat", "params"],
          "`invoke.chat.params`",
          CHAT_PARAMS_ROOTS,
          ctx,
          err,
        );
  const reply =
    block.reply === undefined
      ? null
      : scopedTemplate(
          block.reply,
          ["invoke", "chat", "reply"],
          "`invoke.chat.reply`",
          CHAT_REPLY_ROOTS,
          ctx,
          err,
        );
  return { params, reply, stream: null };
}

/**
 * The field a chat reply streams from (docs/protocols.md, "Streaming"): when `reply` is exactly one
 * `{{ }}` that is a plain chain of names reading `output.<field…>` (the last step's output) or
 * `step.<id>.<field…>`, and that step is a top-level agent step with `stream: true` of a local
 * agent whose output schema does not say the field is something other than a string, or of
 * `core/chat` reading its `text`. Otherwise null: the reply is sent whole at the run's end.
 */
export function chatStreamField(
  bundle: Pick<Bundle, "agents">,
  wf: CompiledWorkflow,
): CompiledChat["stream"] {
  const reply = wf.chat?.reply;
  const chain = reply?.t === "expr" ? namesOf(reply.e) : null;
  if (!chain || chain.length < 2) return null;
  const last = wf.steps[wf.steps.length - 1];
  const [root, ...rest] = chain;
  const stepId = root === "output" ? last?.id : root === "step" ? rest.shift() : undefined;
  const step = wf.steps.find((s) => s.id === stepId);
  if (step?.kind !== "agent" || step.stream !== true || isFanOut(step) || rest.length === 0) return null;
  const agent = bundle.agents[step.agent];
  // core/chat: the model's text is the output's `text`, written as it is (no JSON around it).
  if (agent?.builtin === "chat")
    return rest.length === 1 && rest[0] === "text" ? { step: step.id, field: null } : null;
  if (agent?.builtin !== null) return null;
  const schema = step.outputSchema ?? agent?.outputSchema ?? null;
  let at: unknown = schema;
  for (const name of rest) {
    const props = isObject(at) && isObject(at.properties) ? at.properties : null;
    at = props && Object.hasOwn(props, name) ? props[name] : undefined;
  }
  if (isObject(at) && at.type !== undefined && at.type !== "string") return null;
  return { step: step.id, field: rest };
}

/** `a.b."c-d"` as `["a", "b", "c-d"]`; null for anything but a chain of field names. */
function namesOf(expr: string): string[] | null {
  let ast: AstNode;
  try {
    ast = compile(expr) as unknown as AstNode;
  } catch {
    return null;
  }
  const walk = (n: AstNode): string[] | null => {
    if (n.type === "Field" && typeof n.name === "string") return [n.name];
    if (n.type !== "Subexpression") return null;
    const left = walk(n.left as AstNode);
    const right = walk(n.right as AstNode);
    return left && right ? [...left, ...right] : null;
  };
  return walk(ast);
}
