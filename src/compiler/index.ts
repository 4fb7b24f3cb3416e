/**
 * The workflow compiler: reads workflows/ (YAML, with node positions), checks everything
 * docs/file-format.md lists, and emits the Bundle the Worker imports. Node-only (uses fs and
 * the `yaml` package); nothing here ships in the Worker.
 *
 * Order of work: gateway.yaml first (agent steps check their groups against it), then every
 * `*.workflow.yaml` and, transitively, the sub-workflow files they name; then the file graph
 * (cycles, depth, who is a sub-workflow, who runs under a budget); then each file on its own;
 * last, warnings that need the whole bundle (output shapes). Every check reports and carries on.
 */
import { createHash } from "node:crypto";
import { existsSync, readdirSync, statSync } from "node:fs";
import { dirname, isAbsolute, relative, resolve, sep } from "node:path";
import type { Bundle, CompiledAgent, CompiledGateway, CompiledWorkflow } from "../bundle.ts";
import { AgentResolver } from "./agents.ts";
import { checkCalls } from "./call-checks.ts";
import { type Diagnostic, DiagnosticSink } from "./diagnostics.ts";

export type { Diagnostic } from "./diagnostics.ts";

import { compileGateway, EMPTY_GATEWAY } from "./gateway.ts";
import { runOutputSchema, warnUnknownFields } from "./output-shapes.ts";
import { analyseGraph, type Edge } from "./project-graph.ts";
import { checkServerHosts } from "./server-hosts.ts";
import { checkStructure } from "./structure-check.ts";
import { compileTestFiles, findTestFiles } from "./test-files/compile.ts";
import type { TestSuite } from "./test-files/suite.ts";
import { chatStreamField } from "./triggers/chat/invoke-chat.ts";
import { checkTriggerOwners } from "./triggers/trigger-owners.ts";
import { compileWorkflow, type FieldRead } from "./workflow.ts";
import { wranglerConfigReader } from "./wrangler-config.ts";
import { loadYaml, type SourceFile } from "./yaml-source.ts";

export interface CompileResult {
  /** null when there is any error. */
  bundle: Bundle | null;
  diagnostics: Diagnostic[];
  stats: { workflows: number; steps: number; agents: number; ms: number };
  /** The `*.test.yaml` files anywhere under the directory (never part of the bundle). */
  tests: TestSuite[];
}

export interface CompileOptions {
  /**
   * The wrangler.toml whose `[triggers] crons` and `[[ratelimits]]` the workflows' `schedule` and
   * `invoke.rate_limit` are checked against. Default: `wrangler.toml` beside the workflows folder.
   */
  wranglerConfig?: string;
}

/** Compiles every `*.workflow.yaml` directly in `workflowsDir` and everything they reference. */
export function compileProject(workflowsDir: string, opts: CompileOptions = {}): CompileResult {
  const started = performance.now();
  const dir = resolve(workflowsDir);
  const sink = new DiagnosticSink();
  const display = (abs: string) => {
    const rel = relative(process.cwd(), abs);
    return rel === "" || rel.startsWith("..") || isAbsolute(rel) ? abs : rel;
  };
  const keyOf = (abs: string) => relative(dir, abs).split(sep).join("/");
  const load = (abs: string) => loadYaml(abs, display(abs), keyOf(abs), sink);
  let tests: TestSuite[] = [];
  const wranglerPath = resolve(opts.wranglerConfig ?? resolve(dir, "..", "wrangler.toml"));
  const wrangler = wranglerConfigReader(wranglerPath, display(wranglerPath), sink);

  if (!existsSync(dir) || !statSync(dir).isDirectory()) {
    sink.error(display(dir), { line: 1, col: 1 }, "workflows directory not found");
    return finish(null);
  }

  // ---- gateway ---------------------------------------------------------------------------
  const gatewayPath = resolve(dir, "gateway.yaml");
  const hasGatewayFile = existsSync(gatewayPath);
  let gateway: CompiledGateway = EMPTY_GATEWAY;
  if (hasGatewayFile) {
    const g = load(gatewayPath);
    if (g.data !== null) gateway = compileGateway(g, sink);
  }

  // ---- workflow files, transitively ------------------------------------------------------
  const roots = readdirSync(dir)
    .filter((f) => f.endsWith(".workflow.yaml") && statSync(resolve(dir, f)).isFile())
    .sort()
    .map((f) => resolve(dir, f));
  const files = new Map<string, SourceFile>();
  const edges: Edge[] = [];
  const queue = [...roots];
  while (queue.length > 0) {
    const abs = queue.shift() as string;
    if (files.has(abs)) continue;
    const file = load(abs);
    files.set(abs, file);
    if (file.data === null) continue;
    checkStructure(file, "workflowFile", sink);
    const pipeline = (file.data as { pipeline?: unknown }).pipeline;
    if (!Array.isArray(pipeline)) continue;
    pipeline.forEach((step, i) => {
      const compensate = (step as { compensate?: { workflow?: unknown } } | null)?.compensate;
      // A step's own sub-workflow, and the one its compensation runs (docs/file-format.md, "Compensation").
      for (const [ref, undo] of [
        [(step as { workflow?: unknown } | null)?.workflow, false],
        [typeof compensate === "object" && compensate !== null ? compensate.workflow : undefined, true],
      ] as const) {
        if (typeof ref !== "string") continue;
        const target = resolve(dirname(abs), ref);
        if (!existsSync(target) || !statSync(target).isFile()) {
          sink.error(
            file.display,
            file.at(["pipeline", i, ...(undo ? ["compensate"] : []), "workflow"]),
            `sub-workflow file \`${ref}\` not found (relative to this file)`,
          );
          continue;
        }
        edges.push(
          undo ? { from: abs, step: i, to: target, compensate: true } : { from: abs, step: i, to: target },
        );
        if (!files.has(target)) queue.push(target);
      }
    });
  }

  const budgetOf = (abs: string) => {
    const p = (files.get(abs)?.data as { model_policy?: { cost_budget_usd?: unknown } } | null)?.model_policy;
    return typeof p?.cost_budget_usd === "number" && p.cost_budget_usd > 0;
  };
  const graph = analyseGraph(files, roots, edges, budgetOf, sink);

  // ---- each workflow file ----------------------------------------------------------------
  const agents = new AgentResolver(sink, gateway, { load });
  const fieldReads: FieldRead[] = [];
  const workflows: Record<string, CompiledWorkflow> = {};
  const invocable: Record<string, string> = {};
  const names = new Map<string, SourceFile>();
  for (const [abs, file] of [...files].sort((a, b) => a[1].key.localeCompare(b[1].key))) {
    const subWorkflowKeys = new Map<number, string>();
    const compensationKeys = new Map<number, string>();
    for (const e of edges)
      if (e.from === abs) (e.compensate ? compensationKeys : subWorkflowKeys).set(e.step, keyOf(e.to));
    const wf = compileWorkflow(file, {
      sink,
      gateway,
      hasGatewayFile,
      agents,
      subWorkflowKeys,
      compensationKeys,
      usedBy: graph.usedBy.get(abs) ?? [],
      invocable: roots.includes(abs),
      underBudget: graph.underBudget.has(abs),
      fieldReads,
      wrangler,
    });
    if (!wf) continue;
    const other = names.get(wf.name);
    if (other && wf.name !== "") {
      sink.error(
        file.display,
        file.at(["name"]),
        `duplicate workflow name \`${wf.name}\` (also in \`${other.key}\`)`,
      );
    }
    names.set(wf.name, file);
    workflows[wf.key] = wf;
    if (roots.includes(abs)) invocable[wf.name] = wf.key;
  }

  const agentMap = agents.compiled();
  const body: Omit<Bundle, "hash"> = {
    format: 1,
    workflows: sortKeys(workflows),
    invocable: sortKeys(invocable),
    agents: sortKeys(Object.fromEntries(agentMap) as Record<string, CompiledAgent>),
    gateway,
  };
  checkCalls(body, files, sink);
  checkServerHosts(body, files, sink);
  checkTriggerOwners(body, files, sink);
  warnUnknownFields(body, fieldReads, sink);
  // What the protocol triggers learn of the whole project: the chat reply's streamed field, the tool's outputSchema.
  for (const wf of Object.values(body.workflows)) {
    if (wf.chat) wf.chat.stream = chatStreamField(body, wf);
    if (wf.mcp) {
      const schema = runOutputSchema(body, wf.key);
      wf.mcp.outputSchema = schema && typeof schema === "object" ? schema : null;
    }
  }
  tests = compileTestFiles(findTestFiles(dir).map(load), body, sink);
  if (sink.errorCount > 0) return finish(null);
  const hash = createHash("sha256").update(JSON.stringify(body)).digest("hex");
  const { format, ...rest } = body;
  return finish({ format, hash, ...rest });

  function finish(bundle: Bundle | null): CompileResult {
    const wfs = bundle ? Object.values(bundle.workflows) : [];
    return {
      bundle,
      diagnostics: sink.sorted(),
      stats: {
        workflows: wfs.length,
        steps: wfs.reduce((n, w) => n + w.steps.length, 0),
        agents: bundle ? Object.keys(bundle.agents).length : 0,
        ms: Math.round(performance.now() - started),
      },
      tests,
    };
  }
}

function sortKeys<T>(o: Record<string, T>): Record<string, T> {
  return Object.fromEntries(Object.entries(o).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}
