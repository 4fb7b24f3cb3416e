/**
 * Compiles one workflow file into a CompiledWorkflow: step kinds and the fields each kind
 * accepts, ids and dependencies (implicit previous-step edges, cycles, ancestors), every
 * expression (quoted ids, syntax, which steps, env vars and request headers it reads), templates,
 * env (triggers — auth, headers, response, rate limit, schedule — are in invoke.ts), and the webhook rule that keeps secrets away from caller-chosen hosts. Project-wide facts
 * (is this file used as a sub-workflow, is it under a budget, which agents and groups exist)
 * come in through WorkflowContext.
 */

import {
  type CompiledGateway,
  type CompiledStep,
  type CompiledWorkflow,
  type EnvDecl,
  type ForEach,
  type JsonSchema,
  RESIDENCIES,
  type RetryPolicy,
  STEP_KIND_TRAITS,
  type Template,
} from "../bundle.ts";
import { hint } from "../common/did-you-mean.ts";
import { isObject } from "../common/guards.ts";
import type { AgentResolver } from "./agents.ts";
import type { DiagnosticSink } from "./diagnostics.ts";
import { envShorthandWarning, expandEnvShorthand, readEnvDecls } from "./env-refs.ts";
import { checkExpression, rootPaths } from "./expressions.ts";
import { checkUserSchema } from "./json-schema-check.ts";
import { byIndex, closure, reportCycles } from "./step-dependencies.ts";
import { compileCompensate } from "./step-kinds/compensate.ts";
import { STEP_KIND_COMPILERS, STEP_KINDS, type StepKind } from "./step-kinds/index.ts";
import {
  compileForEach,
  compileOutputSchema,
  compileRetry,
  type ExprSite,
  type StepBase,
  type StepCompileContext,
  type StepKindCompiler,
  traitRefusal,
} from "./step-kinds/step-base.ts";
import { compileScores } from "./step-kinds/step-scores.ts";
import { stepFieldKinds, stepLabel } from "./structure-check.ts";
import { compileTemplate } from "./templates.ts";
import { compileTriggers } from "./triggers/invoke.ts";
import type { WranglerFacts } from "./wrangler-config.ts";
import type { DataPath, SourceFile } from "./yaml-source.ts";

export const MAX_STEPS = 200;
/** What `for_each.from` may read (docs/file-format.md). */
const FROM_ROOTS = new Set(["params", "env", "step", "request"]);
const ITEM_ROOTS = new Set(["item", "item_index"]);

/** A `step.X.FIELD…` read, checked against X's known output shape once everything is compiled. */
export interface FieldRead {
  file: SourceFile;
  path: DataPath;
  workflowKey: string;
  stepId: string;
  fields: string[];
}

export interface WorkflowContext {
  sink: DiagnosticSink;
  gateway: CompiledGateway;
  hasGatewayFile: boolean;
  agents: AgentResolver;
  /** Bundle key of the sub-workflow each `workflow:` step points to (by step index), when it resolved. */
  subWorkflowKeys: Map<number, string>;
  /** Bundle key of the sub-workflow each step's `compensate.workflow` points to (by step index). */
  compensationKeys: Map<number, string>;
  /** Display names of the files that use this one as a sub-workflow (empty: a root-only file). */
  usedBy: string[];
  /** Invocable (`workflows/*.workflow.yaml`). */
  invocable: boolean;
  /** This file or some workflow that runs it has `cost_budget_usd`. */
  underBudget: boolean;
  fieldReads: FieldRead[];
  /** wrangler.toml's crons and rate limit bindings (read on first use). */
  wrangler: () => WranglerFacts;
}

type Obj = Record<string, unknown>;

export function compileWorkflow(file: SourceFile, ctx: WorkflowContext): CompiledWorkflow | null {
  const d = file.data;
  if (!isObject(d)) return null;
  const { sink } = ctx;
  const err = (path: DataPath, msg: string, part: "key" | "value" = "value") =>
    sink.error(file.display, file.at(path, part), msg);
  const name = typeof d.name === "string" ? d.name : "";
  if (ctx.invocable && name.includes("/")) {
    err(
      ["name"],
      `the name \`${name}\` has a \`/\`: only files used as sub-workflows may have a namespaced name; an invocable workflow's name is the \`{name}\` of POST /invoke/{name}`,
    );
  }

  if (d.history === "failures" && !ctx.invocable) {
    err(["history"], "`history` is for invocable workflows (a sub-workflow's run is its caller's)", "key");
  }
  const residency = RESIDENCIES.find((r) => r === d.residency);
  if (d.residency !== undefined && !ctx.invocable) {
    err(
      ["residency"],
      "`residency` is for invocable workflows (a sub-workflow runs in its caller's run, in the caller's jurisdiction)",
      "key",
    );
  }

  // ---- env ---------------------------------------------------------------------------------
  const isSub = ctx.usedBy.length > 0;
  const subNote = () =>
    `\`${file.key}\` is used as a sub-workflow by ${ctx.usedBy.map((u) => `\`${u}\``).join(", ")}`;
  let env: EnvDecl[] = readEnvDecls(file, d.env, sink);
  if (isSub && env.length > 0) {
    err(
      ["env"],
      `\`env\` is for root workflows only: ${subNote()}. Pass values in through the workflow step's \`input\``,
      "key",
    );
    env = [];
  }
  const declared = isSub ? [] : env;
  const isDeclared = (n: string) => declared.some((e) => e.name === n);
  /** Declared env vars that hold secrets: they must not reach a model or a host the caller picks. */
  const secretEnv = new Set(declared.filter((e) => e.secret).map((e) => e.name));
  /** Checks a read of env var `n` at `path`. */
  const useEnv = (n: string | undefined, path: DataPath) => {
    if (isSub) {
      err(
        path,
        `\`env${n ? `.${n}` : ""}\` is not available here: ${subNote()}, and only root workflows read env. Pass the value through \`input\``,
      );
    } else if (n !== undefined && !declared.some((e) => e.name === n)) {
      err(
        path,
        `\`env.${n}\` is not declared in \`env\`${hint(
          n,
          declared.map((e) => e.name),
        )}`,
      );
    }
  };

  // ---- schema, auth, policy --------------------------------------------------------------
  const params = d.params as Obj | undefined;
  const paramsSchema = (isObject(params) && params.schema !== undefined ? params.schema : true) as JsonSchema;
  if (isObject(params) && params.schema !== undefined)
    checkUserSchema(file, ["params", "schema"], params.schema, "params.schema", sink);

  const policy = isObject(d.model_policy) ? d.model_policy : {};
  const costBudgetUsd =
    typeof policy.cost_budget_usd === "number" && policy.cost_budget_usd > 0 ? policy.cost_budget_usd : null;
  const timeoutSet = typeof policy.timeout_s === "number";
  const timeoutS = timeoutSet ? (policy.timeout_s as number) : 300;
  const scoreBudgetUsd = typeof policy.score_budget_usd === "number" ? policy.score_budget_usd : null;

  // ---- steps: ids and dependencies -------------------------------------------------------
  const raw = Array.isArray(d.pipeline) ? (d.pipeline as unknown[]) : [];
  if (raw.length > MAX_STEPS) {
    err(
      ["pipeline"],
      `the pipeline has ${raw.length} steps; the limit is ${MAX_STEPS} per workflow (split it into sub-workflows)`,
      "key",
    );
  }
  const steps = raw.map((s) => (isObject(s) ? s : {}));
  const ids: Array<string | null> = steps.map((s) => (typeof s.id === "string" ? s.id : null));
  const idSet = new Set<string>();
  ids.forEach((id, i) => {
    if (id === null) return;
    if (idSet.has(id)) {
      const first = ids.indexOf(id);
      err(
        ["pipeline", i, "id"],
        `duplicate step id \`${id}\` (also step #${first + 1}, line ${file.at(["pipeline", first, "id"]).line})`,
      );
    }
    idSet.add(id);
  });

  const deps: string[][] = steps.map((s, i) => {
    if (Array.isArray(s.depends_on)) {
      const out: string[] = [];
      s.depends_on.forEach((dep, j) => {
        if (typeof dep !== "string") return;
        if (!idSet.has(dep)) {
          err(
            ["pipeline", i, "depends_on", j],
            `${stepLabel(d, i)}: \`depends_on\` names unknown step \`${dep}\`${hint(dep, idSet)}`,
          );
        } else if (dep === ids[i]) {
          err(["pipeline", i, "depends_on", j], `${stepLabel(d, i)} depends on itself`);
        } else if (!out.includes(dep)) out.push(dep);
      });
      return out;
    }
    const prev = i > 0 ? ids[i - 1] : null;
    return prev ? [prev] : [];
  });
  const indexOf = new Map<string, number>();
  ids.forEach((id, i) => {
    if (id !== null && !indexOf.has(id)) indexOf.set(id, i);
  });
  // ---- triggers: auth, request headers, response, rate limit, schedule ----------------------
  const triggers = compileTriggers(d, {
    file,
    sink,
    name,
    invocable: ctx.invocable,
    subNote: isSub ? subNote : null,
    declared,
    useEnv,
    stepIds: idSet,
    paramsSchema,
    wrangler: ctx.wrangler,
  });

  reportCycles(ids, deps, indexOf, (i, cycle) =>
    err(
      ["pipeline", i, "depends_on"],
      `dependency cycle: ${cycle.map((c) => `\`${c}\``).join(" -> ")}`,
      "key",
    ),
  );
  const ancestors: Array<Set<string>> = deps.map((_, i) => closure(i, deps, indexOf));

  // ---- expressions -----------------------------------------------------------------------
  /** Checks one expression of step `i` read against {params, env, step}; returns the bundle text. */
  const rootExpr = (
    i: number,
    expr: string,
    path: DataPath,
    where: string,
    site: ExprSite = "substitution",
  ): string | null => {
    const c = checkExpression(expr, idSet);
    if (!c.ok) {
      err(path, `${stepLabel(d, i)}: invalid JMESPath in ${where}: ${c.error}`);
      return null;
    }
    for (const p of rootPaths(c.ast)) {
      if (checkItemRead(i, p, path, where, site)) checkRead(i, p, path, expr);
    }
    return c.text;
  };
  /** `item` / `item_index` only in a fan-out step's substitutions; `from` reads only known roots. */
  const checkItemRead = (i: number, p: string[], path: DataPath, where: string, site: ExprSite): boolean => {
    const root = p[0] ?? "";
    const label = stepLabel(d, i);
    if (ITEM_ROOTS.has(root)) {
      const fanOut = isObject(steps[i]?.for_each);
      if (site === "substitution" && fanOut) return false;
      err(
        path,
        !fanOut
          ? `${label}: \`${root}\` is only defined in the substitutions of a step with \`for_each\` (agent \`params\`, workflow \`input\`, webhook \`url\`, \`headers\`, \`body\`)`
          : site === "condition"
            ? `${label}: \`${root}\` is not defined in \`condition\`: the condition is evaluated once, before the fan-out (filter the array in \`for_each.from\` instead)`
            : `${label}: \`${root}\` is not defined in ${where}: it is what \`for_each.from\` produces`,
      );
      return false;
    }
    if (site === "from" && root !== "" && !FROM_ROOTS.has(root)) {
      const asStep = idSet.has(root) ? ` (a step's output is read as \`step.${root}\`)` : "";
      err(
        path,
        `${label}: ${where} reads \`${root}\`, which is not defined: it sees \`params\`, \`env\`, \`step\` and \`request\`${asStep}`,
      );
      return false;
    }
    return true;
  };
  const checkRead = (i: number, p: string[], path: DataPath, expr?: string) => {
    if (p[0] === "env") useEnv(p[1], path);
    if (p[0] === "request") triggers.checkRequestRead(p, path, stepLabel(d, i));
    if (p[0] !== "step" || p[1] === undefined) return;
    const id = p[1];
    const self = ids[i];
    if (!idSet.has(id)) {
      // An unknown hyphenated id parses as a subtraction (`step.no - such`): name it as written.
      const written = expr ? (writtenStepId(expr, id) ?? id) : id;
      err(
        path,
        `${stepLabel(d, i)}: \`step.${written}\` is not a step of this pipeline${hint(written, idSet)}`,
      );
    } else if (id === self) {
      err(path, `${stepLabel(d, i)} reads its own output \`step.${id}\``);
    } else if (!ancestors[i]?.has(id)) {
      err(
        path,
        `${stepLabel(d, i)} reads \`step.${id}\`, which is not one of its ancestors; add \`${id}\` to its \`depends_on\` (directly or through a step that depends on it)`,
      );
    } else if (p.length > 2) {
      ctx.fieldReads.push({ file, path, workflowKey: file.key, stepId: id, fields: p.slice(2) });
    }
  };
  /** ktsu's `env:NAME` means `{{ env.NAME }}` when NAME is declared; else it stays literal text. */
  const takeShorthand = (n: string, p: DataPath): boolean => {
    if (isDeclared(n)) {
      sink.warning(file.display, file.at(p), envShorthandWarning(n));
      return true;
    }
    sink.warning(
      file.display,
      file.at(p),
      `\`env:${n}\` is sent as the literal text: ${isSub ? "only root workflows read env" : `\`${n}\` is not declared in \`env\``} (ktsu's \`env:NAME\` is read as \`{{ env.NAME }}\` only for a declared NAME)`,
    );
    return false;
  };
  const template = (i: number, v: unknown, path: DataPath, encodeAfterQuery = false): Template =>
    compileTemplate(expandEnvShorthand(v, path, takeShorthand), path, {
      expr: (e, p) => rootExpr(i, e, p, `\`{{ ${e} }}\``),
      malformed: (msg, p) => err(p, `${stepLabel(d, i)}: ${msg}`),
      encodeAfterQuery,
    });

  // ---- each step: the base every kind shares, then its kind's compiler ---------------------
  const stepCtx: StepCompileContext = {
    file,
    sink,
    name,
    idSet,
    secretEnv,
    gateway: ctx.gateway,
    hasGatewayFile: ctx.hasGatewayFile,
    agents: ctx.agents,
    underBudget: ctx.underBudget,
    deadline: timeoutSet || !isSub ? { s: timeoutS, set: timeoutSet } : null,
    subWorkflowKeys: ctx.subWorkflowKeys,
    label: (i) => stepLabel(d, i),
    err,
    warn: (path, msg) => sink.warning(file.display, file.at(path), msg),
    template,
    rootExpr,
    checkRead: (i, p, path) => checkRead(i, p, path),
    useEnv,
    isDeclared,
  };
  const fieldKinds = stepFieldKinds();
  const oneOf = STEP_KINDS.map((k) => `\`${k}\``).join(", ");
  const compiled: CompiledStep[] = [];
  steps.forEach((s, i) => {
    const at = (...rest: Array<string | number>): DataPath => ["pipeline", i, ...rest];
    const label = stepLabel(d, i);
    if (!isObject(raw[i])) return; // the format check already said it must be a mapping
    const kinds = STEP_KINDS.filter((k) => k in s);
    if (kinds.length === 0) {
      err(at(), `${label} needs exactly one of ${oneOf}`);
    } else if (kinds.length > 1) {
      err(
        at(kinds[1] as string),
        `${label} has ${kinds.map((k) => `\`${k}\``).join(" and ")}; a step is exactly one of ${oneOf}`,
        "key",
      );
    }
    const kind: StepKind | null = kinds.length === 1 ? (kinds[0] as StepKind) : null;
    if (kind) {
      for (const key of Object.keys(s)) {
        const allowed = fieldKinds.get(key);
        const why = key === "for_each" || key === "retry" ? traitRefusal(kind, key) : null;
        if (why !== null) {
          err(at(key), `${label}: ${why}`, "key");
        } else if (allowed && !allowed.includes(kind)) {
          err(
            at(key),
            `${label}: \`${key}\` belongs on ${allowed.join(" or ")} steps, not on a${kind === "agent" ? "n" : ""} ${kind} step`,
            "key",
          );
        }
      }
    }

    let condition: string | null = null;
    if (typeof s.condition === "string") {
      if (s.condition.includes("{{")) {
        err(at("condition"), `${label}: \`condition\` is bare JMESPath; write it without \`{{ }}\``);
      } else {
        condition = rootExpr(i, s.condition, at("condition"), "`condition`", "condition");
      }
    }
    const id = ids[i];
    if (!kind || typeof id !== "string") return;
    const base: StepBase = {
      id,
      deps: deps[i] ?? [],
      ancestors: [...(ancestors[i] ?? [])].sort(byIndex(indexOf)),
      condition,
    };
    if (s.on_error === "continue") base.onError = "continue";
    const score = compileScores(i, s, stepCtx);
    if (score) base.score = score;
    const compiler: StepKindCompiler<StepKind> = STEP_KIND_COMPILERS[kind];
    const traits = STEP_KIND_TRAITS[kind];
    const compensate =
      traits.compensates && compileCompensate(i, s, stepCtx, ctx.compensationKeys.get(i) ?? null);
    if (compensate) base.compensate = compensate;
    if (!traits.fansOut) {
      compiled.push(compiler.compile(i, s, base, stepCtx));
      return;
    }
    // ktsu's air-lock: output.schema on any step kind.
    const outputSchema = compileOutputSchema(i, s, stepCtx);
    if (outputSchema !== null) base.outputSchema = outputSchema;
    const forEach = compileForEach(i, s, kind, stepCtx);
    const step = compiler.compile(i, s, base, stepCtx);
    if (forEach) (step as { forEach?: ForEach }).forEach = forEach;
    const retry = traits.retries ? compileRetry(s) : null;
    if (retry) (step as { retry?: RetryPolicy }).retry = retry;
    compiled.push(step);
  });

  return {
    key: file.key,
    name,
    version: typeof d.version === "string" ? d.version : null,
    description: typeof d.description === "string" ? d.description : null,
    visibility: d.visibility === "sub-workflow" ? "sub-workflow" : "root",
    paramsSchema,
    env: isSub ? [] : env,
    auth: triggers.auth,
    invoke: triggers.invoke,
    schedule: triggers.schedule,
    queue: triggers.queue,
    email: triggers.email,
    chat: triggers.chat,
    mcp: triggers.mcp,
    a2a: triggers.a2a,
    ...(Object.keys(triggers.search).length > 0 ? { search: triggers.search } : {}),
    ...(triggers.notify.length > 0 ? { notify: triggers.notify } : {}),
    ...(triggers.cancelOn.length > 0 ? { cancelOn: triggers.cancelOn } : {}),
    policy: { costBudgetUsd, timeoutS, timeoutSet, ...(scoreBudgetUsd !== null ? { scoreBudgetUsd } : {}) },
    steps: compiled,
    ...(d.webhooks === "execute" || d.webhooks === "suppress" ? { webhooks: d.webhooks } : {}),
    ...(d.history === "failures" && ctx.invocable ? { history: "failures" as const } : {}),
    ...(residency && ctx.invocable ? { residency } : {}),
  };
}

/** The step id as written after `step.` in `expr`, hyphens included, when it starts with `id`. */
function writtenStepId(expr: string, id: string): string | null {
  const escaped = id.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  const m = new RegExp(`(?:^|[^A-Za-z0-9_."])step\\.(${escaped}[A-Za-z0-9_-]*)`).exec(expr);
  return m?.[1] ?? null;
}
