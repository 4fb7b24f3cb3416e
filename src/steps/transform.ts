/**
 * The transform step (docs/file-format.md, ktsu-compatible): picks its input (explicit `inputs`,
 * else what its dependencies produced, else the run's params), runs the ops over it, and
 * checks the result against `output.schema`. Pure data work: no I/O, no Worker APIs.
 */
import type { Json, TransformStep } from "../bundle.ts";
import { describeViolations, validateJson } from "../engine/schema.ts";
import { render } from "../engine/substitute.ts";
import { applyOps, deepMerge } from "../engine/transform-ops.ts";
import { type StepContext, StepError, type StepExecutor } from "../engine/types.ts";

/** Violations quoted in the error; the rest are counted. */
const MAX_LISTED_VIOLATIONS = 5;

function mergeAll(values: Json[]): Json {
  const [first = null, ...rest] = values;
  return rest.reduce<Json>((acc, v) => deepMerge(acc, v), first);
}

/** One input is used as is; several are deep-merged left to right. */
function inputOf(step: TransformStep, ctx: StepContext): Json {
  if (step.inputs !== null) return mergeAll(step.inputs.map((t) => render(t, ctx.scope)));
  if (step.deps.length === 0) return ctx.scope.params;
  return mergeAll(step.deps.map((id) => ctx.scope.step[id] ?? null));
}

export const executeTransform: StepExecutor<TransformStep> = async (step, ctx) => {
  const result = applyOps(inputOf(step, ctx), step.ops, ctx.scope);
  if (step.outputSchema !== null) {
    const violations = validateJson(step.outputSchema, result);
    if (violations.length > 0) {
      throw new StepError(
        "output_schema_mismatch",
        `result does not match output.schema: ${describeViolations(violations, MAX_LISTED_VIOLATIONS)}`,
      );
    }
  }
  return { result };
};
