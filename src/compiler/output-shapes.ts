/**
 * What the compiler knows about a step's output shape, for the warning on `step.X.FIELD` when X
 * can never have FIELD (a typo that would otherwise read null at run time). Known shapes: a
 * transform's `{result}` (then its output.schema), a webhook's `{status, headers, body}`, an
 * agent's output.schema (the step's own, else the agent's), a sub-workflow's last step (or the
 * step's output.schema), and a fan-out's `{results}`; a skipped step's `{skipped, reason}` and
 * the `{error}` of a failed step with `on_error: continue` are always possible.
 */
import {
  type Bundle,
  type CompiledStep,
  isFanOut,
  type JsonSchema,
  STEP_KIND_TRAITS,
  type WaitStep,
  type WorkflowStep,
} from "../bundle.ts";
import type { DiagnosticSink } from "./diagnostics.ts";
import type { FieldRead } from "./workflow.ts";

type Shape = { properties: Record<string, Shape | null> } | null;

/** Fields every step output can have when the step was skipped. */
const SKIP_FIELDS = ["skipped", "reason"];

export function warnUnknownFields(
  bundle: Omit<Bundle, "hash">,
  reads: FieldRead[],
  sink: DiagnosticSink,
): void {
  for (const r of reads) {
    let shape = stepShape(bundle, r.workflowKey, r.stepId, 0);
    for (let level = 0; level < r.fields.length && shape; level++) {
      const field = r.fields[level] as string;
      if (level === 0 && SKIP_FIELDS.includes(field)) break;
      // `on_error: continue`: a failed step's output is {error: {code, message}}.
      if (level === 0 && field === "error" && continues(bundle, r.workflowKey, r.stepId)) break;
      if (!(field in shape.properties)) {
        const known = Object.keys(shape.properties)
          .map((k) => `\`${k}\``)
          .join(", ");
        const path = ["step", r.stepId, ...r.fields.slice(0, level + 1)].join(".");
        sink.warning(
          r.file.display,
          r.file.at(r.path),
          `\`${path}\` is always null: the output of step \`${r.stepId}\` has no field \`${field}\` here (known: ${known})`,
        );
        break;
      }
      shape = shape.properties[field] ?? null;
    }
  }
}

function continues(bundle: Omit<Bundle, "hash">, workflowKey: string, stepId: string): boolean {
  return bundle.workflows[workflowKey]?.steps.find((s) => s.id === stepId)?.onError === "continue";
}

function stepShape(bundle: Omit<Bundle, "hash">, workflowKey: string, stepId: string, depth: number): Shape {
  if (depth > 10) return null;
  const step: CompiledStep | undefined = bundle.workflows[workflowKey]?.steps.find((s) => s.id === stepId);
  if (!step) return null;
  // A fan-out's output is its items' results, whatever each item gives.
  if (isFanOut(step)) return { properties: { results: null } };
  // The kind's output trait (src/bundle/steps.ts) says what is known of it.
  switch (STEP_KIND_TRAITS[step.kind].output) {
    case "result":
      return { properties: { result: schemaShape(step.outputSchema ?? null) } };
    case "http":
      return { properties: { status: null, headers: null, body: null } };
    case "signal": {
      // A signal's body (its schema says what it holds); a sleep's `{slept_s}`.
      const { signal } = step as WaitStep;
      return signal ? schemaShape(signal.schema) : { properties: { slept_s: null } };
    }
    case "schema": {
      const agent = "agent" in step ? bundle.agents[step.agent] : undefined;
      return schemaShape(step.outputSchema ?? agent?.outputSchema ?? null);
    }
    case "child": {
      if (step.outputSchema) return schemaShape(step.outputSchema);
      const child = bundle.workflows[(step as WorkflowStep).workflow];
      const last = child?.steps[child.steps.length - 1];
      return child && last ? stepShape(bundle, child.key, last.id, depth + 1) : null;
    }
  }
}

/** A closed-enough object schema: `properties` listed and no `additionalProperties` allowance. */
function schemaShape(schema: JsonSchema | null): Shape {
  if (!schema || typeof schema !== "object") return null;
  const props = schema.properties;
  if (!props || typeof props !== "object" || Array.isArray(props)) return null;
  const extra = schema.additionalProperties;
  if (extra === true || (extra && typeof extra === "object") || schema.patternProperties) return null;
  const out: Record<string, Shape | null> = {};
  for (const [k, v] of Object.entries(props)) out[k] = schemaShape(v as JsonSchema);
  return { properties: out };
}

/**
 * The JSON Schema of a run's `output` as the build knows it (docs/protocols.md, "MCP server": a
 * tool's `outputSchema`): the last step's `output.schema` applied to its kind's output shape (a
 * transform's `{result}`, a webhook's `{status, headers, body}`, an agent's object, a sub-workflow's
 * last step, a wait's signal body or `{slept_s}`, a fan-out's `{results}`). Null when the schema is
 * not an object schema, or when the output may be something else: a last step with a condition
 * (skipped: `{skipped, reason}`) or `on_error: continue` (`{error}`).
 */
export function runOutputSchema(
  bundle: Omit<Bundle, "hash">,
  workflowKey: string,
  depth = 0,
): JsonSchema | null {
  const wf = bundle.workflows[workflowKey];
  const last = wf?.steps[wf.steps.length - 1];
  if (!wf || !last || depth > 10 || last.condition !== null || last.onError === "continue") return null;
  const schema = stepOutputSchema(bundle, last, depth);
  return schema && typeof schema === "object" && schema.type === "object" ? schema : null;
}

function stepOutputSchema(
  bundle: Omit<Bundle, "hash">,
  step: CompiledStep,
  depth: number,
): JsonSchema | null {
  const object = (properties: Record<string, JsonSchema>): JsonSchema => ({
    type: "object",
    properties,
    required: Object.keys(properties),
  });
  if (isFanOut(step)) return object({ results: { type: "array" } });
  switch (STEP_KIND_TRAITS[step.kind].output) {
    case "result":
      return object({ result: step.outputSchema ?? {} });
    case "http":
      return object({ status: { type: "integer" }, headers: { type: "object" }, body: {} });
    case "signal": {
      const { signal } = step as WaitStep;
      return signal ? signal.schema : object({ slept_s: { type: "number" } });
    }
    case "schema": {
      const agent = "agent" in step ? bundle.agents[step.agent] : undefined;
      return step.outputSchema ?? agent?.outputSchema ?? null;
    }
    case "child":
      return step.outputSchema ?? runOutputSchema(bundle, (step as WorkflowStep).workflow, depth + 1);
  }
}
