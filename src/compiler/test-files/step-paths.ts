/**
 * Mocks, approvals and expectations all name steps by slash paths that reach into sub-workflows,
 * fan-out items and an agent's tool calls; one resolver gives them the same answer and the same
 * "did you mean" when a path names nothing.
 */
import {
  type AgentStep,
  type Bundle,
  type CompiledAllowEntry,
  type CompiledServerRef,
  type CompiledStep,
  type CompiledWorkflow,
  isFanOut,
} from "../../bundle.ts";
import { hint } from "../../common/did-you-mean.ts";
import { exactNames, governingEntry, serverFor } from "../../engine/allowlist.ts";

/** What a path names below an agent step: one of its tools, or its review by a human. */
export type CallTarget =
  | { kind: "tool"; tool: string }
  | { kind: "needs_human" }
  | { kind: "judge"; scorer: string };

/** What a slash path in a test names. */
export type PathTarget =
  | {
      ok: true;
      step: CompiledStep;
      item: boolean;
      /** `<step>/tools/<tool>` or `<step>/needs_human`; null for the step itself. */
      call: CallTarget | null;
      /** The workflow step whose `webhooks: suppress` (or its file's) skips webhooks here, or null. */
      suppressedBy: string | null;
    }
  | { ok: false; message: string };

/** The tool servers of an agent step's agent (docs/agents-and-tools.md): its calls are `<path>/tools/<tool>`. */
export function serversOf(bundle: Omit<Bundle, "hash">, step: AgentStep): CompiledServerRef[] {
  const agent = bundle.agents[step.agent];
  return agent?.builtin === null ? (agent.servers ?? []) : [];
}

/**
 * The allowlist entry that lets an agent step's model call `tool` (by its plain name, or as
 * `<server>__<tool>` when two servers share it), or why it never can.
 */
export function toolRule(
  bundle: Omit<Bundle, "hash">,
  step: AgentStep,
  tool: string,
  asOffered: boolean,
): { ok: true; server: string; entry: CompiledAllowEntry } | { ok: false; message: string } {
  const refs = serversOf(bundle, step);
  const split = asOffered ? /^(.+?)__(.+)$/.exec(tool) : null;
  const named = split ? refs.find((r) => r.name === split[1]) : undefined;
  const ref = named ?? serverFor(refs, tool);
  const plain = named && split ? (split[2] as string) : tool;
  const entry = ref ? governingEntry(ref.allow, plain) : undefined;
  if (ref && entry) return { ok: true, server: ref.name, entry };
  const names = [...new Set(refs.flatMap((r) => exactNames(r.allow)))];
  const lists = refs
    .map((r) => `${r.name}: ${r.allow === null ? "*" : r.allow.map((e) => e.pattern).join(", ")}`)
    .join("; ");
  return {
    ok: false,
    message: `\`${tool}\` is not allowed by the allowlists of agent \`${bundle.agents[step.agent]?.name}\` (${lists}): the model is never offered it${hint(tool, names)}`,
  };
}

/**
 * Resolves a slash path (`notify/post`, `analyze/2`, `risk/tools/get-sum`) from `wf`: step ids,
 * descending into sub-workflows; a number names a fan-out item; `tools/<name>` a tool of an agent.
 */
export function resolveStepPath(
  bundle: Omit<Bundle, "hash">,
  wf: CompiledWorkflow,
  path: string,
): PathTarget {
  const segs = path.split("/");
  let current = wf;
  let prefix = "";
  let suppressedBy: string | null = null;
  for (let i = 0; i < segs.length; ) {
    const id = segs[i] as string;
    const step = current.steps.find((s) => s.id === id);
    if (!step) {
      const where =
        prefix === "" ? `workflow \`${current.name}\`` : `\`${prefix.slice(0, -1)}\` (${current.name})`;
      return {
        ok: false,
        message: `\`${prefix}${id}\` is not a step of ${where}${hint(
          id,
          current.steps.map((s) => s.id),
        )}`,
      };
    }
    const here = prefix + id;
    i++;
    let item = false;
    if (i < segs.length && /^\d+$/.test(segs[i] as string)) {
      if (!isFanOut(step)) {
        return {
          ok: false,
          message: `\`${here}\` has no \`for_each\`, so \`${here}/${segs[i]}\` names no item`,
        };
      }
      item = true;
      i++;
    }
    if (i === segs.length) return { ok: true, step, item, call: null, suppressedBy };
    const next = segs[i] as string;
    if (step.kind === "agent" && next === "needs_human") {
      if (i + 1 < segs.length) {
        return { ok: false, message: `\`${path}\`: nothing follows \`needs_human\`` };
      }
      return { ok: true, step, item, call: { kind: "needs_human" }, suppressedBy };
    }
    if (next === "judge") {
      const scorer = segs.slice(i + 1).join("/");
      if (!(step.score ?? []).some((s) => s.judge && s.name === scorer)) {
        const judges = (step.score ?? []).filter((s) => s.judge).map((s) => s.name);
        return {
          ok: false,
          message: `\`${here}\` has no judge \`${scorer}\`${judges.length > 0 ? ` (its judges: ${judges.join(", ")})` : " (it has no judge scorers)"}`,
        };
      }
      return { ok: true, step, item, call: { kind: "judge", scorer }, suppressedBy };
    }
    if (step.kind === "agent" && next === "tools") {
      const tool = segs.slice(i + 1).join("/");
      if (tool === "")
        return { ok: false, message: `\`${path}\` names no tool (write \`${here}/tools/NAME\`)` };
      if (serversOf(bundle, step).length === 0) {
        return {
          ok: false,
          message: `agent step \`${here}\` has no tool servers, so it makes no tool calls`,
        };
      }
      return { ok: true, step, item, call: { kind: "tool", tool }, suppressedBy };
    }
    const child = step.kind === "workflow" ? bundle.workflows[step.workflow] : undefined;
    if (!child) {
      return {
        ok: false,
        message: `\`${here}\` is ${step.kind === "agent" ? "an" : "a"} ${step.kind} step: it has no steps inside (\`${path}\`)`,
      };
    }
    // docs/file-format.md: webhooks run only if every workflow step on the way says `execute` (and,
    // ktsu's dual opt-in, the child file does not say `suppress`).
    const fileSuppresses = (child as { webhooks?: string }).webhooks === "suppress";
    if (
      suppressedBy === null &&
      (step.kind !== "workflow" || step.webhooks !== "execute" || fileSuppresses)
    ) {
      suppressedBy = here;
    }
    current = child;
    prefix = `${here}/${item ? `${segs[i - 1]}/` : ""}`;
  }
  return { ok: false, message: `\`${path}\` is empty` };
}
