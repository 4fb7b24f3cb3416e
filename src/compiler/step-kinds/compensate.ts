/**
 * `compensate:` (docs/file-format.md, "Compensation"): what undoes a completed step once its run
 * ends failed or canceled. It applies to the kinds whose `compensates` trait is set (the field
 * check refuses it elsewhere, from the schema's `x-applies-to`), and holds exactly one `webhook`
 * block (the webhook step's fields) or one `workflow` block (a sub-workflow with `input`), plus
 * `retry` and `timeout_s`; the workflow block's file is found by the project graph (index.ts), as a
 * workflow step's is. Its templates read what the step read, plus `output` (the step's own,
 * or a fan-out item's) and `error` (the run's): any other root is a build error here, where it
 * would otherwise render as null when the run has already failed.
 */
import type { CompiledCompensation, HttpMethod, RetryPolicy, Template } from "../../bundle.ts";
import { isObject } from "../../common/guards.ts";
import { envRefName } from "../env-refs.ts";
import { checkExpression, rootPaths } from "../expressions.ts";
import { splitTemplate } from "../templates.ts";
import type { DataPath } from "../yaml-source.ts";
import { compileRetry, type Obj, type StepCompileContext, stepPath } from "./step-base.ts";

/** Default: 10 attempts, back-off from 1 s doubling to 300 s (docs/file-format.md). */
export const COMPENSATION_RETRY: RetryPolicy = { maxAttempts: 10, backoffMs: 1_000, maxBackoffMs: 300_000 };
export const COMPENSATION_TIMEOUT_S = 30;

const ROOTS = new Set(["params", "env", "step", "request", "output", "error"]);
const ITEM_ROOTS = new Set(["item", "item_index"]);

/**
 * The step's compiled `compensate`, or null (none, or too broken to compile: the errors are
 * reported). `subWorkflowKey`: the bundle key its `workflow` block resolved to (project-graph.ts).
 */
export function compileCompensate(
  i: number,
  s: Obj,
  c: StepCompileContext,
  subWorkflowKey: string | null,
): CompiledCompensation | null {
  if (s.compensate === undefined) return null;
  const at = (...rest: Array<string | number>): DataPath => stepPath(i, "compensate", ...rest);
  const label = c.label(i);
  if (!isObject(s.compensate)) return null; // the structure check said it must be a mapping
  const comp = s.compensate;
  if (comp.agent !== undefined) {
    c.err(
      at("agent"),
      `${label}: a compensation is a \`webhook\` or a \`workflow\` block, not an \`agent\`: what undoes a step must do the same thing every time it is tried`,
      "key",
    );
    return null;
  }
  const blocks = ["webhook", "workflow"].filter((k) => comp[k] !== undefined);
  if (blocks.length === 0) {
    c.err(
      at(),
      `${label}: \`compensate\` needs a \`webhook\` or a \`workflow\` block (what undoes the step)`,
      "key",
    );
    return null;
  }
  if (blocks.length > 1) {
    c.err(
      at("workflow"),
      `${label}: \`compensate\` holds exactly one block, a \`webhook\` or a \`workflow\`, not both`,
      "key",
    );
    return null;
  }
  const fanOut = isObject(s.for_each);
  const template = (v: unknown, path: DataPath, encodeAfterQuery = false): Template => {
    checkRoots(v, path, fanOut, label, c);
    return c.template(i, v, path, encodeAfterQuery);
  };

  let webhook: CompiledCompensation["webhook"] = null;
  let workflow: CompiledCompensation["workflow"] = null;
  if (isObject(comp.webhook)) {
    const w = comp.webhook;
    let sign: { secretEnv: string } | null = null;
    if (isObject(w.sign)) {
      const n = envRefName(w.sign.secret);
      if (n !== null) {
        c.useEnv(n, at("webhook", "sign", "secret"));
        sign = { secretEnv: n };
      }
    }
    webhook = {
      url: template(typeof w.url === "string" ? w.url : "", at("webhook", "url"), true),
      method: (typeof w.method === "string" ? w.method : "POST") as HttpMethod,
      headers: w.headers === undefined ? null : template(w.headers, at("webhook", "headers")),
      body: w.body === undefined ? null : template(w.body, at("webhook", "body")),
      sign,
    };
  } else if (comp.workflow !== undefined) {
    if (subWorkflowKey === null) return null; // the project graph reported the path
    workflow = {
      key: subWorkflowKey,
      input: template(comp.input ?? {}, at("input")),
      webhooks: comp.webhooks === "suppress" ? "suppress" : "execute",
    };
  } else {
    return null;
  }
  const timeoutS =
    typeof comp.timeout_s === "number"
      ? comp.timeout_s
      : isObject(comp.webhook) && typeof comp.webhook.timeout_s === "number"
        ? comp.webhook.timeout_s
        : COMPENSATION_TIMEOUT_S;
  return { webhook, workflow, retry: compileRetry(comp, 300) ?? COMPENSATION_RETRY, timeoutS };
}

/** Every `{{ }}` of `v` reads only what a compensation can read. */
function checkRoots(v: unknown, path: DataPath, fanOut: boolean, label: string, c: StepCompileContext): void {
  if (typeof v === "string") {
    if (!v.includes("{{")) return;
    let segments: ReturnType<typeof splitTemplate>;
    try {
      segments = splitTemplate(v);
    } catch {
      return; // c.template reports a malformed template
    }
    for (const seg of segments) {
      if (!("expr" in seg)) continue;
      const checked = checkExpression(seg.expr, []);
      if (!checked.ok) continue; // c.template reports it
      for (const p of rootPaths(checked.ast)) {
        const root = p[0] ?? "";
        // `item` outside a fan-out is refused by c.template, as in any substitution.
        if (root === "" || ROOTS.has(root) || ITEM_ROOTS.has(root)) continue;
        c.err(
          path,
          `${label}: a compensation reads \`params\`, \`env\`, \`step\`, \`request\`, \`output\` (the step's output)${fanOut ? ", `item`, `item_index`" : ""} and \`error\` (the run's), not \`${root}\``,
        );
      }
    }
    return;
  }
  const children: Array<[string | number, unknown]> = Array.isArray(v)
    ? v.map((x, k) => [k, x])
    : isObject(v)
      ? Object.entries(v)
      : [];
  for (const [k, x] of children) checkRoots(x, [...path, k], fanOut, label, c);
}
