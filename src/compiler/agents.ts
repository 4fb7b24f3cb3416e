/**
 * Resolves `agent:` references. `core/<name>@<semver>` is a built-in (src/agents/builtins.ts;
 * `@1` / `@1.0` pick the newest match); anything else is a path to a ktsu-format `*.agent.yaml`
 * relative to the file that names it, compiled once however many steps use it.
 */
import { existsSync, statSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { BUILTIN_AGENTS } from "../agents/builtins.ts";
import type { CompiledAgent, CompiledGateway, Template } from "../bundle.ts";
import { hint } from "../common/did-you-mean.ts";
import type { DiagnosticSink } from "./diagnostics.ts";
import { checkExpression, rootPaths } from "./expressions.ts";
import { checkUserSchema } from "./json-schema-check.ts";
import { ServerCompiler, secretParamNames } from "./servers.ts";
import { checkStructure } from "./structure-check.ts";
import { compileTemplate, hasTemplate } from "./templates.ts";
import type { DataPath, SourceFile } from "./yaml-source.ts";

const BUILTIN_REF = /^([A-Za-z0-9_-]+)\/([A-Za-z0-9_.-]+)@(.*)$/;
/** docs/agents-and-tools.md: model calls of one agent step when the agent file sets no `max_turns`. */
const DEFAULT_MAX_TURNS = 10;

export interface ResolvedAgent {
  key: string;
  agent: CompiledAgent;
  /** `model.max_tokens` of an agent file (the bundle carries it on the step). */
  maxTokens: number | null;
}

export interface AgentFiles {
  /** Loads a file the project has not loaded yet; `key` is relative to the workflows dir. */
  load(abs: string): SourceFile;
}

export class AgentResolver {
  private readonly cache = new Map<string, ResolvedAgent | null>();
  private readonly sink: DiagnosticSink;
  private readonly gateway: CompiledGateway;
  private readonly files: AgentFiles;
  private readonly servers: ServerCompiler;

  constructor(sink: DiagnosticSink, gateway: CompiledGateway, files: AgentFiles) {
    this.sink = sink;
    this.gateway = gateway;
    this.files = files;
    this.servers = new ServerCompiler(sink, files);
  }

  /** Every agent resolved so far, by bundle key. */
  compiled(): Map<string, CompiledAgent> {
    const out = new Map<string, CompiledAgent>();
    for (const r of this.cache.values()) if (r) out.set(r.key, r.agent);
    return out;
  }

  resolve(ref: string, from: SourceFile, path: DataPath): ResolvedAgent | null {
    const m = BUILTIN_REF.exec(ref);
    if (m) return this.builtin(ref, m[1] as string, m[2] as string, m[3] as string, from, path);
    const abs = resolve(dirname(from.abs), ref);
    if (!existsSync(abs) || !statSync(abs).isFile()) {
      this.sink.error(
        from.display,
        from.at(path),
        `agent file \`${ref}\` not found (relative to this file). A built-in agent is written \`core/<name>@<version>\``,
      );
      return null;
    }
    if (!this.cache.has(abs)) this.cache.set(abs, this.compileLocal(this.files.load(abs)));
    return this.cache.get(abs) ?? null;
  }

  private builtin(
    ref: string,
    ns: string,
    name: string,
    version: string,
    from: SourceFile,
    path: DataPath,
  ): ResolvedAgent | null {
    const report = (msg: string) => this.sink.error(from.display, from.at(path), msg);
    const names = [...new Set(BUILTIN_AGENTS.map((a) => `core/${a.name}`))];
    if (ns !== "core") {
      const ktsu =
        ns === "ktsu" ? " ktsu's documentation examples (such as `ktsu/parser@1.0.0`) never shipped." : "";
      report(
        `unknown built-in agent \`${ref}\`: only the \`core\` namespace exists (${names.join(", ")}).${ktsu} Use one of those or a local \`*.agent.yaml\` path`,
      );
      return null;
    }
    const candidates = BUILTIN_AGENTS.filter((a) => a.name === name);
    if (candidates.length === 0) {
      report(
        `unknown built-in agent \`core/${name}\`${hint(`core/${name}`, names)} (built-ins: ${names.join(", ")})`,
      );
      return null;
    }
    if (!/^\d+(\.\d+){0,2}$/.test(version)) {
      report(`agent \`${ref}\`: version must be \`1.0.0\`, \`1.0\` or \`1\`, got \`${version}\``);
      return null;
    }
    const wanted = version.split(".").map(Number);
    const matching = candidates
      .filter((a) => wanted.every((n, i) => a.version.split(".").map(Number)[i] === n))
      .sort((a, b) => compareVersions(b.version, a.version));
    const chosen = matching[0];
    if (!chosen) {
      report(
        `no version of \`core/${name}\` matches \`@${version}\` (available: ${candidates.map((a) => a.version).join(", ")})`,
      );
      return null;
    }
    const key = `core/${chosen.name}@${chosen.version}`;
    const { version: _v, ...rest } = chosen;
    const resolved: ResolvedAgent = { key, agent: { key, ...rest }, maxTokens: null };
    this.cache.set(key, resolved);
    return resolved;
  }

  private compileLocal(file: SourceFile): ResolvedAgent | null {
    if (file.data === null) return null;
    checkStructure(file, "agentFile", this.sink);
    const d = file.data as Record<string, unknown>;
    if (typeof d !== "object" || Array.isArray(d)) return null;
    const err = (path: DataPath, msg: string) => this.sink.error(file.display, file.at(path), msg);

    let group: string | null = null;
    let maxTokens: number | null = null;
    if (typeof d.model === "string") group = d.model;
    else if (d.model && typeof d.model === "object") {
      const m = d.model as { group?: unknown; max_tokens?: unknown };
      if (typeof m.group === "string") group = m.group;
      if (typeof m.max_tokens === "number") maxTokens = m.max_tokens;
    }
    if (group !== null && !this.gateway.groups.some((g) => g.name === group)) {
      const path = typeof d.model === "string" ? ["model"] : ["model", "group"];
      err(
        path,
        `unknown model group \`${group}\`${hint(
          group,
          this.gateway.groups.map((g) => g.name),
        )} (groups are declared in workflows/gateway.yaml)`,
      );
    }

    const params = d.params as { schema?: unknown } | undefined;
    const paramsSchema =
      params && typeof params === "object" && params.schema !== undefined
        ? params.schema
        : { type: "object" };
    if (params?.schema !== undefined)
      checkUserSchema(file, ["params", "schema"], params.schema, "params.schema", this.sink);
    const output = d.output as { schema?: unknown } | undefined;
    if (output?.schema !== undefined)
      checkUserSchema(file, ["output", "schema"], output.schema, "output.schema", this.sink);

    const prompt = (d.prompt && typeof d.prompt === "object" ? d.prompt : {}) as {
      system?: unknown;
      user?: unknown;
      reflect?: unknown;
    };
    if (typeof prompt.system === "string" && hasTemplate(prompt.system)) {
      err(["prompt", "system"], "`prompt.system` must be static: `{{ }}` is only allowed in `prompt.user`");
    }
    const secretParams = secretParamNames(paramsSchema);
    /** `prompt.user` and `prompt.reflect`: `{{ params.X }}` only, and never a secret param (the model would see it). */
    const promptTemplate = (text: string, field: "user" | "reflect"): Template =>
      compileTemplate(text, ["prompt", field], {
        expr: (e, path) => {
          const c = checkExpression(e, []);
          if (!c.ok) {
            err(path, `invalid JMESPath in \`{{ ${e} }}\`: ${c.error}`);
            return null;
          }
          for (const p of rootPaths(c.ast)) {
            if (p[0] !== "params")
              err(path, `\`{{ ${e} }}\`: an agent prompt can only read \`params\`, not \`${p[0] ?? "$"}\``);
            else if (p[1] !== undefined && secretParams.includes(p[1]))
              err(
                path,
                `\`{{ ${e} }}\`: param \`${p[1]}\` is \`secret: true\`; a prompt would send it to the model`,
              );
          }
          return c.text;
        },
        malformed: (msg, path) => err(path, `\`prompt.${field}\`: ${msg}`),
      });
    const user = typeof prompt.user === "string" ? promptTemplate(prompt.user, "user") : null;
    const reflect = typeof prompt.reflect === "string" ? promptTemplate(prompt.reflect, "reflect") : null;

    const props =
      params && typeof params.schema === "object" && params.schema !== null
        ? (params.schema as { properties?: unknown }).properties
        : undefined;
    const servers = this.servers.compileRefs(
      {
        file,
        params: props && typeof props === "object" ? new Set(Object.keys(props as object)) : null,
        secretParams: new Set(secretParams),
      },
      d.servers,
    );

    const agent: CompiledAgent = {
      key: file.key,
      name: typeof d.name === "string" ? d.name : file.key,
      description: typeof d.description === "string" ? d.description : null,
      builtin: null,
      group,
      maxTurns: typeof d.max_turns === "number" ? d.max_turns : DEFAULT_MAX_TURNS,
      paramsSchema: paramsSchema as CompiledAgent["paramsSchema"],
      system: typeof prompt.system === "string" ? prompt.system : null,
      user,
      outputSchema: (output?.schema ?? null) as CompiledAgent["outputSchema"],
      // Only when set: older bundles (and pinned runs) simply lack them.
      ...(reflect ? { reflect } : {}),
      ...(servers.length > 0 ? { servers } : {}),
      ...(secretParams.length > 0 ? { secretParams } : {}),
    };
    return { key: file.key, agent, maxTokens };
  }
}

function compareVersions(a: string, b: string): number {
  const x = a.split(".").map(Number);
  const y = b.split(".").map(Number);
  for (let i = 0; i < 3; i++) if ((x[i] ?? 0) !== (y[i] ?? 0)) return (x[i] ?? 0) - (y[i] ?? 0);
  return 0;
}
