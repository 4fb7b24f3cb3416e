/**
 * The tool-server counterpart of the webhook rule (docs/file-format.md: a secret sent to a host the caller
 * picks is a secret handed to the caller). A workflow step gives its agent params; the agent file
 * gives its servers params from those (`{{ params.X }}`); a server's `url` and `auth.secret` read
 * its own params. When a secret env var reaches a server param this way (every server param goes
 * out to the server: `auth.secret` as a header, all of them as `config` of MCP `initialize`) while
 * the host of the server's url comes from the invoke's params, a step output or the request, the
 * caller picks where the secret goes. Likewise an approval's `notify.url` and its `sign.secret`.
 *
 * A warning, not an error: the build makes it an error only for webhooks (docs/file-format.md), and a workflow that takes a
 * local MCP URL from its params (a test on a dynamic port) is a valid file.
 */
import type {
  AgentStep,
  Bundle,
  CompiledServerRef,
  CompiledStep,
  CompiledWorkflow,
  Template,
  WorkflowStep,
} from "../bundle.ts";
import { isObject } from "../common/guards.ts";
import { sourcedSteps } from "./call-checks.ts";
import { callerHost, hostSource, secretReads } from "./caller-host.ts";
import type { DiagnosticSink } from "./diagnostics.ts";
import { rootReads } from "./expression-reads.ts";
import { checkExpression } from "./expressions.ts";
import { stepLabel } from "./structure-check.ts";
import { templateExprs } from "./templates.ts";
import type { SourceFile } from "./yaml-source.ts";

/** The value a template gives `params.NAME` (null: the whole `params`); undefined: none. */
type ParamValue = (name: string | null) => Template | undefined;

type Obj = Record<string, unknown>;

export function checkServerHosts(
  bundle: Omit<Bundle, "hash">,
  files: Map<string, SourceFile>,
  sink: DiagnosticSink,
): void {
  const steps = [...sourcedSteps(bundle, files)];
  const sourceOf = new Map<CompiledStep, { file: SourceFile; index: number }>();
  for (const { file, step, index } of steps) sourceOf.set(step, { file, index });
  for (const { wf, file, step, index } of steps) {
    if (step.kind !== "agent" || index < 0) continue;
    const servers = bundle.agents[step.agent]?.servers ?? [];
    if (servers.length === 0) continue;
    const guarded = new Set<string>();
    // The step runs in its own workflow, and inside every workflow step that runs that one: a
    // secret of the root can reach it through the workflow steps' `input`, and so can a host.
    for (const run of runsOf(bundle, wf.key)) {
      const secrets = new Set(run.root.env.filter((e) => e.secret).map((e) => e.name));
      /** An agent-file template as the root sees it: through the step's params, then each `input`. */
      const lift = (t: Template) =>
        run.through.reduceRight(
          (acc, ws) => substitute(acc, templateParams(ws.input)),
          substitute(t, stepParams(step)),
        );
      const outer = run.through[0];
      const outerAt = outer ? sourceOf.get(outer) : undefined;
      /**
       * `url` and `values` are agent-file templates (they read the agent's params). Warns when the
       * url's host is the caller's and a value reads a secret env var, once both are traced
       * through the step's params (and the inputs of the workflow steps that run it).
       */
      const check = (
        url: Template,
        values: Template[],
        says: (secrets: string) => string,
        server?: string,
      ) => {
        const carrier = hostSource(url);
        if (carrier === null) return; // a literal host in the agent or server file
        const host = callerHost(lift(url), run.through.length === 0 ? (step.forEach?.from ?? null) : null);
        if (host === null) return;
        if (server) guarded.add(server);
        if (secrets.size === 0) return;
        const leaked = [...new Set(values.flatMap((v) => secretReads(lift(v), secrets)))];
        if (leaked.length === 0) return;
        const names = leaked.map((n) => `\`env.${n}\``).join(" and ");
        if (outer && outerAt) {
          sink.warning(
            outerAt.file.display,
            outerAt.file.at(["pipeline", outerAt.index, "input"]),
            `${stepLabel(outerAt.file.data, outerAt.index)} passes secrets into sub-workflow \`${wf.name}\`: in its step \`${step.id}\`, ${says(names)}, but its url host comes from ${host}: a caller could send the secret to any host. Take the host from a literal or an env var`,
          );
          return;
        }
        const name = /^params\.(.+)$/.exec(carrier)?.[1];
        const params = (file.data as { pipeline: Obj[] }).pipeline[index]?.params;
        const at =
          name !== undefined && isObject(params) && Object.hasOwn(params, name)
            ? file.at(["pipeline", index, "params", name])
            : file.at(["pipeline", index, "agent"]);
        sink.warning(
          file.display,
          at,
          `${stepLabel(file.data, index)}: ${says(names)}, but its url host comes from ${host}: a caller could send the secret to any host. Take the host from a literal or an env var`,
        );
      };
      for (const ref of servers) {
        const own = serverParams(ref);
        const values = Object.keys(ref.server.params).map((n): Template => own(n) ?? { t: "lit", v: null });
        check(
          substitute(ref.server.url, own),
          values,
          (s) => `tool server \`${ref.name}\` gets secret ${s}`,
          ref.name,
        );
        for (const entry of ref.allow ?? []) {
          const notify = entry.approval?.notify;
          if (!notify?.signSecret) continue;
          check(
            notify.url,
            [notify.signSecret],
            (s) =>
              `the approval notification for \`${entry.pattern}\` of tool server \`${ref.name}\` is signed with secret ${s}`,
          );
        }
      }
    }
    // At run time such a server is refused a secret unless its host is private and private hosts
    // are allowed (src/steps/tool-loop.ts): the build can only warn, the run closes it.
    if (guarded.size > 0) step.callerHostServers = [...guarded].sort();
  }
}

/** Each way a workflow runs: as a root, and inside each workflow step that runs it (outermost first). */
function runsOf(
  bundle: Omit<Bundle, "hash">,
  key: string,
  depth = 0,
): Array<{ root: CompiledWorkflow; through: WorkflowStep[] }> {
  const wf = bundle.workflows[key];
  if (!wf) return [];
  const out: Array<{ root: CompiledWorkflow; through: WorkflowStep[] }> = [{ root: wf, through: [] }];
  // The compiler refuses recursion and nesting past 8; this only bounds the walk.
  if (depth >= 8) return out;
  for (const parent of Object.values(bundle.workflows)) {
    for (const s of parent.steps) {
      if (s.kind !== "workflow" || s.workflow !== key) continue;
      for (const r of runsOf(bundle, parent.key, depth + 1))
        out.push({ root: r.root, through: [...r.through, s] });
    }
  }
  return out;
}

/** What an agent's servers[] entry gives the server's params (its own default when it gives none). */
function serverParams(ref: CompiledServerRef): ParamValue {
  const one = (n: string): Template | undefined => {
    const given = ref.params[n];
    if (given !== undefined) return given;
    const d = ref.server.params[n]?.default;
    return d === undefined ? undefined : { t: "lit", v: d };
  };
  return (n) =>
    n !== null
      ? one(n)
      : {
          t: "obj",
          entries: Object.keys(ref.server.params).map((k) => [k, one(k) ?? { t: "lit", v: null }]),
        };
}

/** What a workflow step gives its agent's params. */
function stepParams(step: AgentStep): ParamValue {
  return templateParams(step.params);
}

/** What a mapping template (an agent step's `params`, a workflow step's `input`) gives each name. */
function templateParams(t: Template): ParamValue {
  return (n) => {
    if (n === null) return t;
    // A step's `params` is a mapping (the format says so): `obj`, or `lit` when nothing in it is computed.
    if (t.t === "obj") return t.entries.find(([k]) => k === n)?.[1];
    if (t.t === "lit" && isObject(t.v) && Object.hasOwn(t.v, n)) return { t: "lit", v: t.v[n] ?? null };
    return undefined;
  };
}

/**
 * `t` with every read of `params` replaced by what `value` gives them, so a server's url written
 * `{{ params.url }}` becomes what the agent (then the step) passes. An expression that does more
 * than read one param becomes one that reads everything its params read (enough to say where a
 * host comes from and which env vars a value reads).
 */
function substitute(t: Template, value: ParamValue): Template {
  switch (t.t) {
    case "lit":
      return t;
    case "expr":
      return exprValue(t.e, value);
    case "arr":
      return { t: "arr", items: t.items.map((x) => substitute(x, value)) };
    case "obj":
      return { t: "obj", entries: t.entries.map(([k, x]) => [k, substitute(x, value)]) };
    case "concat": {
      const parts: Array<string | { e: string }> = [];
      for (const part of t.parts) {
        if (typeof part === "string") {
          parts.push(part);
          continue;
        }
        const v = exprValue(part.e, value);
        if (v.t === "lit")
          parts.push(v.v === null ? "" : typeof v.v === "string" ? v.v : JSON.stringify(v.v));
        else if (v.t === "expr") parts.push({ e: v.e });
        else if (v.t === "concat") parts.push(...v.parts);
        else parts.push(readsOf(templateExprs(v)));
      }
      return { t: "concat", parts };
    }
  }
}

function exprValue(e: string, value: ParamValue): Template {
  const c = checkExpression(e, []);
  // Not readable by the checker: the worst case, an expression over the whole scope.
  if (!c.ok) return { t: "expr", e: "@" };
  const ast = c.ast as {
    type: string;
    name?: unknown;
    left?: { type: string; name?: unknown };
    right?: unknown;
  };
  if (ast.type === "Field" && ast.name === "params") return value(null) ?? { t: "lit", v: null };
  const right = ast.right as { type: string; name?: unknown } | undefined;
  if (
    ast.type === "Subexpression" &&
    ast.left?.type === "Field" &&
    ast.left.name === "params" &&
    right?.type === "Field" &&
    typeof right.name === "string"
  ) {
    return value(right.name) ?? { t: "lit", v: null };
  }
  const reads = rootReads(c.ast);
  const names = reads.whole ? [null] : reads.paths.filter((p) => p[0] === "params").map((p) => p[1] ?? null);
  const exprs = names.flatMap((n) => {
    const v = value(n);
    return v ? templateExprs(v) : [];
  });
  const r = readsOf(exprs);
  return typeof r === "string" ? { t: "lit", v: r } : { t: "expr", e: r.e };
}

/** One expression that reads what all of `exprs` read; text (no slash, not the caller's) when none. */
function readsOf(exprs: string[]): string | { e: string } {
  if (exprs.length === 0) return "\u0000";
  return { e: exprs.length === 1 ? (exprs[0] as string) : `[${exprs.join(", ")}]` };
}
