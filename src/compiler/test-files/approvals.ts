/**
 * An approval in a test is a human's decision the runner gives when the run asks for it; a key
 * that can never be asked (a step, an ungated tool) would leave the decision unused and the run
 * waiting, so it is refused at build time.
 */
import type { Bundle, CompiledWorkflow } from "../../bundle.ts";
import { isObject } from "../../common/guards.ts";
import type { DataPath } from "../yaml-source.ts";
import type { Report } from "./report.ts";
import { resolveStepPath, toolRule } from "./step-paths.ts";
import type { ApprovalDecision, ApprovalSpec } from "./suite.ts";

const DECISIONS = ["approved", "rejected", "timeout"] as const;

/**
 * One entry of a case's `approvals`: `<step>/tools/<tool>` (a tool whose allowlist entry has
 * `require_approval`) or `<step>/needs_human` (an output with `ktsu_needs_human`), decided
 * `approved`, `rejected` or `timeout`, or `{decision, comment, after_s}`; a list decides
 * successive approvals of the key in order.
 */
export function compileApproval(
  bundle: Omit<Bundle, "hash">,
  wf: CompiledWorkflow,
  key: string,
  value: unknown,
  path: DataPath,
  err: Report,
  warn: Report,
): ApprovalSpec | null {
  const target = resolveStepPath(bundle, wf, key);
  if (!target.ok) {
    err(path, `approvals: ${target.message}`, "key");
    return null;
  }
  const { step, call } = target;
  if (call === null || step.kind !== "agent") {
    err(
      path,
      `approvals: \`${key}\` is a step; an approval is asked by a gated tool call (\`${key}/tools/TOOL\`) or by an agent's output for review (\`${key}/needs_human\`)`,
      "key",
    );
    return null;
  }
  let ownTimeout: number | null = null;
  if (call.kind === "tool") {
    const rule = toolRule(bundle, step, call.tool, false);
    if (!rule.ok) {
      err(path, `approvals: ${rule.message}`, "key");
      return null;
    }
    if (rule.entry.approval === null) {
      err(
        path,
        `approvals: \`${call.tool}\` has no \`require_approval\` (allowlist entry \`${rule.entry.pattern}\` of server \`${rule.server}\`): its calls are made without asking`,
        "key",
      );
      return null;
    }
    ownTimeout = rule.entry.approval.timeoutS;
  }
  const items = Array.isArray(value) ? value : [value];
  const decisions: ApprovalDecision[] = [];
  items.forEach((item, j) => {
    const at = Array.isArray(value) ? [...path, j] : path;
    const d: ApprovalDecision | null =
      typeof item === "string"
        ? { decision: item as ApprovalDecision["decision"], comment: null, after_s: 0 }
        : isObject(item) && typeof item.decision === "string"
          ? {
              decision: item.decision as ApprovalDecision["decision"],
              comment: typeof item.comment === "string" ? item.comment : null,
              after_s: typeof item.after_s === "number" ? item.after_s : 0,
            }
          : null;
    if (d === null || !(DECISIONS as readonly string[]).includes(d.decision)) return; // the schema check reported it
    if (d.decision === "timeout" && ownTimeout === null) {
      warn(
        typeof item === "string" ? at : [...at, "decision"],
        `\`${key}\` has no timeout of its own: \`timeout\` waits for the run's deadline, and the run fails \`timeout\``,
      );
    }
    decisions.push(d);
  });
  if (decisions.length !== items.length) return null;
  return { decisions, repeat: !Array.isArray(value) };
}
