/**
 * Checks the values a step hands to what it calls, where the build can already see a run would
 * fail: an agent step's `params` or a workflow step's `input` that lacks a field the callee's
 * schema requires, or names one it forbids (`additionalProperties: false`). Values may be computed
 * (`{{ }}`); only the keys are checked here, the values are validated at run time.
 */
import type { Bundle, CompiledStep, CompiledWorkflow, JsonSchema, Template } from "../bundle.ts";
import { hint } from "../common/did-you-mean.ts";
import type { DiagnosticSink } from "./diagnostics.ts";
import type { SourceFile } from "./yaml-source.ts";

/** Each compiled step with its workflow, its source file and its index in the file's `pipeline`. */
export function* sourcedSteps(
  bundle: Omit<Bundle, "hash">,
  files: Map<string, SourceFile>,
): Generator<{ wf: CompiledWorkflow; file: SourceFile; step: CompiledStep; index: number }> {
  const byKey = new Map([...files.values()].map((f) => [f.key, f]));
  for (const wf of Object.values(bundle.workflows)) {
    const file = byKey.get(wf.key);
    if (!file) continue;
    const pipeline = (file.data as { pipeline?: unknown[] } | null)?.pipeline ?? [];
    for (const step of wf.steps) {
      const index = pipeline.findIndex((s) => (s as { id?: unknown } | null)?.id === step.id);
      yield { wf, file, step, index };
    }
  }
}

export function checkCalls(
  bundle: Omit<Bundle, "hash">,
  files: Map<string, SourceFile>,
  sink: DiagnosticSink,
): void {
  for (const { file, step, index } of sourcedSteps(bundle, files)) {
    if (step.kind === "agent") {
      const agent = bundle.agents[step.agent];
      if (!agent) continue;
      check(
        file,
        index,
        "params",
        "agent",
        step.params,
        agent.paramsSchema,
        `agent \`${agent.key}\``,
        "param",
        sink,
      );
    } else if (step.kind === "workflow") {
      const child = bundle.workflows[step.workflow];
      if (!child) continue;
      if (step.webhooks === "execute" && child.webhooks === "suppress") {
        sink.warning(
          file.display,
          file.at(["pipeline", index, "webhooks"]),
          `step \`${step.id}\` says \`webhooks: execute\`, but \`${child.key}\` declares \`webhooks: suppress\`: its webhook steps are always skipped`,
        );
      }
      check(
        file,
        index,
        "input",
        "workflow",
        step.input,
        child.paramsSchema,
        `sub-workflow \`${child.key}\``,
        "input",
        sink,
      );
    }
  }
}

function check(
  file: SourceFile,
  index: number,
  field: "params" | "input",
  refField: string,
  given: Template,
  schema: JsonSchema,
  callee: string,
  noun: string,
  sink: DiagnosticSink,
): void {
  const keys = literalKeys(given);
  // An invalid schema (null, a list) is reported where it is declared; there is nothing to check against.
  if (keys === null || schema === null || typeof schema !== "object" || Array.isArray(schema)) return;
  const stepData = ((file.data as { pipeline: Array<Record<string, unknown>> }).pipeline[index] ??
    {}) as Record<string, unknown>;
  const id = String(stepData.id);
  // The old nested form (`params.agent: {...}`) is reported on its own; its keys mean nothing here.
  const nested = stepData[field] as Record<string, unknown> | undefined;
  if (
    field === "params" &&
    ["agent", "server"].some((k) => nested?.[k] !== null && typeof nested?.[k] === "object")
  )
    return;
  const where =
    field in stepData ? file.at(["pipeline", index, field], "key") : file.at(["pipeline", index, refField]);
  const required = Array.isArray(schema.required)
    ? schema.required.filter((r): r is string => typeof r === "string")
    : [];
  for (const r of required) {
    if (!keys.includes(r)) {
      sink.error(
        file.display,
        where,
        `step \`${id}\`: ${callee} requires ${noun} \`${r}\`, which \`${field}\` does not give`,
      );
    }
  }
  const props = schema.properties;
  if (schema.additionalProperties === false && props && typeof props === "object" && !Array.isArray(props)) {
    const known = Object.keys(props);
    for (const k of keys) {
      if (!known.includes(k)) {
        sink.error(
          file.display,
          file.at(["pipeline", index, field, k], "key"),
          `step \`${id}\`: ${callee} does not take ${noun} \`${k}\`${hint(k, known)}`,
        );
      }
    }
  }
}

/** Keys of a map known at build time, or null when the value is computed. */
function literalKeys(t: Template): string[] | null {
  if (t.t === "obj") return t.entries.map(([k]) => k);
  if (t.t === "lit" && t.v !== null && typeof t.v === "object" && !Array.isArray(t.v))
    return Object.keys(t.v);
  return null;
}
