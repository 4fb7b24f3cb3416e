/**
 * Agent output contracts (docs/agents-and-tools.md): the reserved `ktsu_` fields of an agent's validated output,
 * acted on in a fixed order — injection attempt (the run fails), untrusted content, low quality,
 * confidence under the step's threshold (one reflect call, then fail), a human's review, a skip —
 * then `ktsu_flags`, `ktsu_rationale` and `ktsu_confidence` kept as the step's annotations and
 * every `ktsu_*` key removed from the output.
 *
 * The reflect call and the human review are given in as functions: this module decides, the
 * agent executor talks to the model and the approvals host.
 */
import type { Json, JsonObject, JsonSchema } from "../bundle.ts";
import { isObject } from "../common/guards.ts";
import { type Annotations, type ApprovalOutcome, StepError, StepSkipped } from "../engine/types.ts";

export const RESERVED_PREFIX = "ktsu_";
const FLAGS = ["ktsu_injection_attempt", "ktsu_untrusted_content", "ktsu_low_quality", "ktsu_needs_human"];

export interface ContractOptions {
  /** The step's `confidence_threshold`, or null. */
  threshold: number | null;
  /** One reflect call on a draft below the threshold; null: the agent has no `prompt.reflect`. */
  reflect: ((draft: Json) => Promise<Json>) | null;
  /** Waits for a human's decision on an output with `ktsu_needs_human: true`. */
  askHuman: (output: Json) => Promise<ApprovalOutcome>;
  /** Called with the annotations of every output checked; the last call (the final output's) wins. */
  annotate: (a: Annotations | null) => void;
}

/**
 * The value to check against the agent's output schema: reserved keys the schema does not
 * declare are left out, so a schema with `additionalProperties: false` that never mentions them
 * (ktsu consumes them before its check) still accepts a reply that sets them.
 */
export function forValidation(value: Json, schema: JsonSchema | null): Json {
  if (!isObject(value) || schema === null || typeof schema !== "object") return value;
  const declared = (schema.properties ?? {}) as JsonObject;
  let out: JsonObject | null = null;
  for (const key of Object.keys(value)) {
    if (key.startsWith(RESERVED_PREFIX) && !Object.hasOwn(declared, key)) {
      out ??= { ...value };
      delete out[key];
    }
  }
  return out ?? value;
}

/** Every reserved field with the wrong type: the step fails as an output that breaks its contract. */
function typeProblems(o: JsonObject): string[] {
  const problems: string[] = [];
  for (const f of FLAGS) if (f in o && typeof o[f] !== "boolean") problems.push(`${f} must be true or false`);
  const c = o.ktsu_confidence;
  if ("ktsu_confidence" in o && (typeof c !== "number" || c < 0 || c > 1 || !Number.isFinite(c))) {
    problems.push("ktsu_confidence must be a number from 0 to 1");
  }
  if ("ktsu_skip_reason" in o && typeof o.ktsu_skip_reason !== "string") {
    problems.push("ktsu_skip_reason must be a string");
  }
  const flags = o.ktsu_flags;
  if ("ktsu_flags" in o && !(Array.isArray(flags) && flags.every((x) => typeof x === "string"))) {
    problems.push("ktsu_flags must be a list of strings");
  }
  if ("ktsu_rationale" in o && typeof o.ktsu_rationale !== "string") {
    problems.push("ktsu_rationale must be a string");
  }
  return problems;
}

function annotationsOf(o: JsonObject): Annotations | null {
  if (!("ktsu_flags" in o) && !("ktsu_rationale" in o) && !("ktsu_confidence" in o)) return null;
  return {
    flags: Array.isArray(o.ktsu_flags) ? (o.ktsu_flags as string[]) : [],
    rationale: typeof o.ktsu_rationale === "string" ? o.ktsu_rationale : null,
    confidence: typeof o.ktsu_confidence === "number" ? o.ktsu_confidence : null,
  };
}

/** The reserved keys of a reply alone (a built-in agent keeps them for the contract, see agent.ts). */
export function reservedOf(reply: Json): JsonObject {
  if (!isObject(reply)) return {};
  const out: JsonObject = {};
  for (const [k, v] of Object.entries(reply)) if (k.startsWith(RESERVED_PREFIX)) out[k] = v;
  return out;
}

export function withoutReserved(o: JsonObject): JsonObject {
  const out: JsonObject = {};
  for (const [k, v] of Object.entries(o)) if (!k.startsWith(RESERVED_PREFIX)) out[k] = v;
  return out;
}

/** Applies docs/agents-and-tools.md to a validated output; returns the step output, or throws StepError / StepSkipped. */
export async function applyContracts(output: Json, opts: ContractOptions): Promise<Json> {
  let value = output;
  let reflected = false;
  for (;;) {
    if (!isObject(value)) return value;
    const o = value;
    // Every round: after a reflect the annotations are the reflection's, even when it has none.
    const note = () => opts.annotate(annotationsOf(o));
    const problems = typeProblems(o);
    if (problems.length > 0) {
      throw new StepError("output_schema_mismatch", `reserved output fields: ${problems.join("; ")}`);
    }
    note();
    if (o.ktsu_injection_attempt === true) {
      throw new StepError(
        "injection_detected",
        "the agent reported a prompt injection attempt (ktsu_injection_attempt)",
      );
    }
    if (o.ktsu_untrusted_content === true) {
      throw new StepError(
        "untrusted_content",
        "the agent reported untrusted content (ktsu_untrusted_content)",
      );
    }
    if (o.ktsu_low_quality === true) {
      throw new StepError("low_quality", "the agent reported a low-quality output (ktsu_low_quality)");
    }
    if (opts.threshold !== null) {
      const confidence = typeof o.ktsu_confidence === "number" ? o.ktsu_confidence : 0;
      if (confidence < opts.threshold) {
        if (opts.reflect && !reflected) {
          reflected = true;
          value = await opts.reflect(value);
          continue;
        }
        const missing =
          typeof o.ktsu_confidence === "number" ? "" : " (ktsu_confidence missing: counted as 0)";
        throw new StepError(
          "low_confidence",
          `ktsu_confidence ${confidence}${missing} is below the step's confidence_threshold ${opts.threshold}${reflected ? " after one reflect call" : ""}`,
        );
      }
    }
    if (o.ktsu_needs_human === true) {
      const outcome = await opts.askHuman(withoutReserved(o));
      if (outcome.status !== "approved") {
        throw new StepError(
          "human_rejected",
          `a reviewer ${outcome.status === "timeout" ? "did not decide in time" : "rejected the output"}${outcome.comment ? `: ${outcome.comment}` : ""}`,
        );
      }
    }
    // Non-empty as docs/agents-and-tools.md and ktsu say: a reason of spaces is still a reason.
    if (typeof o.ktsu_skip_reason === "string" && o.ktsu_skip_reason !== "") {
      throw new StepSkipped(o.ktsu_skip_reason);
    }
    return withoutReserved(o);
  }
}
