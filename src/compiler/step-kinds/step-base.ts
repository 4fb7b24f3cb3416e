/**
 * What every step kind's compiler shares: the context a step is compiled in (the workflow's
 * diagnostics, expressions, templates and env rules, set up once by workflow.ts), the base every
 * compiled step carries, and the fields common to several kinds (`output.schema`, `for_each`).
 * A step kind is one module beside this one and one entry in the table of index.ts.
 */
import {
  type CompiledGateway,
  type ForEach,
  type JsonSchema,
  type RetryPolicy,
  STEP_KIND_TRAITS,
  type StepBase,
  type StepKind,
  type StepKinds,
  type Template,
} from "../../bundle.ts";
import { isObject } from "../../common/guards.ts";
import type { AgentResolver } from "../agents.ts";
import type { DiagnosticSink } from "../diagnostics.ts";
import { checkUserSchema } from "../json-schema-check.ts";
import { splitTemplate } from "../templates.ts";
import type { DataPath, SourceFile } from "../yaml-source.ts";

export type Obj = Record<string, unknown>;

/** Where an expression sits: a substitution, a condition, or `for_each.from`. */
export type ExprSite = "substitution" | "condition" | "from";

/** The workflow a step is compiled in, and the checks every kind uses. */
export interface StepCompileContext {
  file: SourceFile;
  sink: DiagnosticSink;
  /** The workflow's name. */
  name: string;
  /** Step ids of the pipeline. */
  idSet: ReadonlySet<string>;
  /** Declared env vars that hold secrets: they must not reach a model or a host the caller picks. */
  secretEnv: ReadonlySet<string>;
  gateway: CompiledGateway;
  hasGatewayFile: boolean;
  agents: AgentResolver;
  /** This workflow or one that runs it has `cost_budget_usd`. */
  underBudget: boolean;
  /**
   * The run's deadline as this file knows it, in seconds: its own `model_policy.timeout_s` (`set`),
   * or the default 300 for a root workflow; null for a sub-workflow that sets none (its caller's
   * holds).
   */
  deadline: { s: number; set: boolean } | null;
  /** Bundle key of the sub-workflow each `workflow:` step points to (by step index). */
  subWorkflowKeys: ReadonlyMap<number, string>;
  /** `step <id>` (or `step #n`) as messages name step `i`. */
  label(i: number): string;
  err(path: DataPath, msg: string, part?: "key" | "value"): void;
  warn(path: DataPath, msg: string): void;
  /** A template of step `i` (its `{{ }}` expressions checked); `encodeAfterQuery` for URLs. */
  template(i: number, v: unknown, path: DataPath, encodeAfterQuery?: boolean): Template;
  /** Checks one bare expression of step `i`; returns its bundle text, or null when it is wrong. */
  rootExpr(i: number, expr: string, path: DataPath, where: string, site?: ExprSite): string | null;
  /** Checks a read of `p` (`["step", id, …]`, `["env", name]`, …) by step `i`. */
  checkRead(i: number, p: string[], path: DataPath): void;
  /** Checks a read of env var `n`. */
  useEnv(n: string | undefined, path: DataPath): void;
  isDeclared(n: string): boolean;
}

/** What every compiled step carries, whatever its kind (the bundle's type). */
export type { StepBase };

/**
 * `retry` of step `i` (the structure check has checked its fields and ranges), or null;
 * `maxBackoffS`: the longest back-off when the block names none (a step's 60 s, a compensation's 300 s).
 */
export function compileRetry(s: Obj, maxBackoffDefaultS = 60): RetryPolicy | null {
  const r = s.retry;
  if (!isObject(r) || typeof r.max_attempts !== "number") return null;
  const backoffS = typeof r.backoff_s === "number" ? r.backoff_s : 1;
  const maxBackoffS = typeof r.max_backoff_s === "number" ? r.max_backoff_s : maxBackoffDefaultS;
  return {
    maxAttempts: r.max_attempts,
    backoffMs: Math.round(backoffS * 1000),
    maxBackoffMs: Math.round(Math.max(backoffS, maxBackoffS) * 1000),
  };
}

/** One step kind's compiler: its block of a step, checked and compiled. */
export interface StepKindCompiler<K extends keyof StepKinds> {
  compile(i: number, s: Obj, base: StepBase, c: StepCompileContext): StepKinds[K];
}

/** Path of a field of step `i`. */
export function stepPath(i: number, ...rest: Array<string | number>): DataPath {
  return ["pipeline", i, ...rest];
}

/** ktsu's air-lock: `output.schema` on any step kind. */
export function compileOutputSchema(i: number, s: Obj, c: StepCompileContext): JsonSchema | null {
  const output = isObject(s.output) ? s.output : null;
  if (!output || output.schema === undefined) return null;
  checkUserSchema(c.file, stepPath(i, "output", "schema"), output.schema, "output.schema", c.sink);
  return output.schema as JsonSchema;
}

/** `for_each` of step `i`: `from` checked like a condition (one `{{ expr }}` accepted too). */
export function compileForEach(
  i: number,
  s: Obj,
  kind: keyof StepKinds,
  c: StepCompileContext,
): ForEach | null {
  const fe = s.for_each;
  if (!isObject(fe)) return null;
  const at = (...rest: Array<string | number>): DataPath => stepPath(i, "for_each", ...rest);
  const label = c.label(i);
  let from = "";
  // An empty `from` is reported once, by the structure check ("must not be empty").
  if (typeof fe.from === "string" && fe.from !== "") {
    let expr: string | null = fe.from;
    if (expr.includes("{{")) {
      let exprs: string[] = [];
      let text = "";
      try {
        for (const seg of splitTemplate(expr)) {
          if ("expr" in seg) exprs.push(seg.expr);
          else text += seg.text;
        }
      } catch {
        exprs = [];
      }
      expr = exprs.length === 1 && text.trim() === "" ? (exprs[0] as string) : null;
      if (expr === null) {
        c.err(
          at("from"),
          `${label}: \`for_each.from\` is bare JMESPath (like \`condition\`) or exactly one \`{{ expr }}\``,
        );
      }
    }
    if (expr !== null) from = c.rootExpr(i, expr, at("from"), "`for_each.from`", "from") ?? "";
  }
  const int = (v: unknown): number | null => (typeof v === "number" && Number.isInteger(v) ? v : null);
  // ktsu reads 0 as "no limit" for both: so do we (the same as leaving them out).
  const limit = (v: unknown): number | null => (int(v) === 0 ? null : int(v));
  const concurrency = limit(fe.concurrency);
  if (kind === "agent" && concurrency === null && !c.underBudget) {
    c.warn(
      at(),
      `${label} fans an LLM agent out with no \`for_each.concurrency\`, and workflow \`${c.name}\` has no \`model_policy.cost_budget_usd\`: up to 1000 model calls with nothing capping their spend; set either`,
    );
  }
  return {
    from,
    concurrency,
    maxItems: limit(fe.max_items),
    maxFailures: int(fe.max_failures) ?? 0,
  };
}

/**
 * Why `for_each` or `retry` does not apply to a step of this kind, where its traits leave more to
 * say than the schema's `x-applies-to` message (held to the traits by test/compiler): null when
 * the field applies, or when that message is enough.
 */
export function traitRefusal(kind: StepKind, key: "for_each" | "retry"): string | null {
  const traits = STEP_KIND_TRAITS[kind];
  if (key === "for_each" && !traits.fansOut && kind === "transform")
    return "`for_each` does not apply to transform steps: a transform already works on whole arrays; process each item with a `map` op (`ops: [{map: {expr: ...}}]`)";
  if (key === "retry" && !traits.retries && kind === "transform")
    return "`retry` does not apply to transform steps: a transform is deterministic, it would fail the same way again";
  if (key === "retry" && !traits.retries && kind === "workflow")
    return "`retry` does not apply to workflow steps: the sub-workflow's own webhook and agent steps carry their own `retry`";
  return null;
}
