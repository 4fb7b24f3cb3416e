/**
 * The `transform` step kind: `inputs` (step ids or one `{{ expr }}` each) and `ops` (map, filter,
 * sort, deduplicate, flatten, merge), every expression parsed and checked here, once.
 */
import type { Template, TransformOp } from "../../bundle.ts";
import { hint } from "../../common/did-you-mean.ts";
import { isObject } from "../../common/guards.ts";
import { checkExpression } from "../expressions.ts";
import { compileOutputSchema, type StepKindCompiler, stepPath } from "./step-base.ts";

export const transformStep: StepKindCompiler<"transform"> = {
  compile(i, s, base, c) {
    const at = (...rest: Array<string | number>) => stepPath(i, ...rest);
    const label = c.label(i);
    const t = isObject(s.transform) ? s.transform : {};
    let inputs: Template[] | null = null;
    if (Array.isArray(t.inputs)) {
      inputs = [];
      t.inputs.forEach((inp, j) => {
        const from = isObject(inp) ? inp.from : undefined;
        if (typeof from !== "string") return;
        const path = at("transform", "inputs", j, "from");
        if (from.includes("{{")) {
          const tpl = c.template(i, from, path);
          if (tpl.t !== "expr") {
            c.err(path, `${label}: \`from\` must be a step id or exactly one \`{{ expr }}\``);
            return;
          }
          inputs?.push(tpl);
        } else if (c.idSet.has(from)) {
          c.checkRead(i, ["step", from], path);
          inputs?.push({ t: "expr", e: `step.${JSON.stringify(from)}` });
        } else if (from === "input") {
          // ktsu's sub-workflows write `from: input` for the workflow's own input.
          c.warn(
            path,
            `${label}: \`from: input\` (ktsu's form) reads this workflow's input; write \`from: "{{ params }}"\``,
          );
          inputs?.push({ t: "expr", e: "params" });
        } else {
          c.err(
            path,
            `${label}: \`from: ${from}\` is neither a step id nor one \`{{ expr }}\`${hint(from, c.idSet)}`,
          );
        }
      });
    }
    const ops: TransformOp[] = [];
    (Array.isArray(t.ops) ? t.ops : []).forEach((op, j) => {
      if (!isObject(op) || Object.keys(op).length !== 1) return;
      const [opName, arg] = Object.entries(op)[0] as [string, unknown];
      const path = at("transform", "ops", j, opName);
      const a = isObject(arg) ? arg : {};
      switch (opName) {
        case "map":
        case "filter": {
          if (typeof a.expr !== "string") return;
          // The current item is the root here: step ids are not in scope, so nothing is quoted.
          const ce = checkExpression(a.expr, []);
          if (!ce.ok)
            c.err([...path, "expr"], `${label}: invalid JMESPath in \`${opName}.expr\`: ${ce.error}`);
          else ops.push({ op: opName, expr: ce.text });
          return;
        }
        case "sort":
        case "deduplicate": {
          if (typeof a.field !== "string") return;
          // The field is read from each item like a map expression (`created-at` is one name).
          const ce = checkExpression(a.field, []);
          if (!ce.ok)
            c.err([...path, "field"], `${label}: invalid JMESPath in \`${opName}.field\`: ${ce.error}`);
          else if (opName === "sort")
            ops.push({ op: "sort", field: ce.text, order: a.order === "desc" ? "desc" : "asc" });
          else ops.push({ op: "deduplicate", field: ce.text });
          return;
        }
        case "flatten":
          ops.push({ op: "flatten" });
          return;
        case "merge": {
          const merged: string[] = [];
          (Array.isArray(arg) ? arg : []).forEach((ref, k) => {
            if (typeof ref !== "string") return;
            c.checkRead(i, ["step", ref], [...path, k]);
            merged.push(ref);
          });
          ops.push({ op: "merge", steps: merged });
          return;
        }
      }
    });
    return { ...base, kind: "transform", inputs, ops, outputSchema: compileOutputSchema(i, s, c) };
  },
};
