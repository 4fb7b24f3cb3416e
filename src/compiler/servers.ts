/**
 * Compiles an agent file's `servers:` block and the `*.server.yaml` files it points to (ktsu
 * format, docs/agents-and-tools.md): paths (relative to the agent file), the server's url and auth templates (which
 * read only the server's own declared params), the values the agent gives those params (literals
 * or `{{ params.X }}` of the agent), allowlist patterns (`name`, `prefix*`, `*`) and approval
 * policies. Agent and server files never read `env`: a secret reaches a server as a workflow step
 * param (`{{ env.X }}` there), through the agent's params, and is masked like every secret.
 */
import { existsSync, statSync } from "node:fs";
import { dirname, relative, resolve } from "node:path";
import type {
  CompiledAllowEntry,
  CompiledApprovalPolicy,
  CompiledServer,
  CompiledServerParam,
  CompiledServerRef,
  Json,
  Template,
} from "../bundle.ts";
import { hint } from "../common/did-you-mean.ts";
import { isObject } from "../common/guards.ts";
import type { DiagnosticSink } from "./diagnostics.ts";
import { checkExpression, rootPaths } from "./expressions.ts";
import { compileServerAuth } from "./server-auth.ts";
import { checkStructure } from "./structure-check.ts";
import { compileTemplate } from "./templates.ts";
import type { DataPath, SourceFile } from "./yaml-source.ts";

type Obj = Record<string, unknown>;

/** Per tool call, when the server file sets no `timeout_s`. */
export const DEFAULT_TOOL_TIMEOUT_S = 30;

/** `name`, `prefix*` or `*`: a `*` only at the end, and never twice. */
export function isAllowPattern(p: string): boolean {
  if (p === "") return false;
  const star = p.indexOf("*");
  return star === -1 || star === p.length - 1;
}

/** `30m`, `2h`, `1h30m`, `90s`, `500ms`, `45` or a number: seconds, or null when it is none of those. */
export function parseDuration(v: unknown): number | null {
  if (typeof v === "number") return Number.isFinite(v) && v > 0 ? v : null;
  if (typeof v !== "string") return null;
  const text = v.trim();
  if (/^\d+(\.\d+)?$/.test(text)) {
    const n = Number(text);
    return n > 0 ? n : null;
  }
  if (!/^(\d+(\.\d+)?(ms|s|m|h|d))+$/.test(text)) return null;
  const unit: Record<string, number> = { ms: 0.001, s: 1, m: 60, h: 3600, d: 86400 };
  let total = 0;
  for (const m of text.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h|d)/g))
    total += Number(m[1]) * (unit[m[2] as string] ?? 0);
  return total > 0 ? total : null;
}

function isHttpUrl(text: string): boolean {
  try {
    const u = new URL(text);
    return (u.protocol === "https:" || u.protocol === "http:") && u.hostname !== "";
  } catch {
    return false;
  }
}

/** Names of the agent's params whose schema says `secret: true` (ktsu's marking). */
export function secretParamNames(paramsSchema: unknown): string[] {
  const props = isObject(paramsSchema) && isObject(paramsSchema.properties) ? paramsSchema.properties : {};
  return Object.entries(props)
    .filter(([, p]) => isObject(p) && p.secret === true)
    .map(([name]) => name);
}

/**
 * ktsu resolves `servers[].path` from the project root (`servers/x.server.yaml` in an agent under
 * `agents/`); here it is relative to the agent file. When the path exists from a folder above the
 * agent's, the error says what to write instead.
 */
function projectRootHint(agentAbs: string, path: string): string {
  const from = dirname(agentAbs);
  let dir = dirname(from);
  for (let up = 0; up < 4; up++) {
    const candidate = resolve(dir, path);
    if (existsSync(candidate) && statSync(candidate).isFile()) {
      return `; ktsu reads it from the project root, here paths are relative to the agent file: write \`${relative(from, candidate)}\``;
    }
    const parent = dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  return "";
}

export interface ServerFiles {
  load(abs: string): SourceFile;
}

/** What the agent file offers its servers' param values: its own params. */
interface AgentView {
  file: SourceFile;
  /** The agent's declared params (from params.schema.properties); null when it declares none. */
  params: Set<string> | null;
  secretParams: Set<string>;
}

export class ServerCompiler {
  private readonly cache = new Map<string, CompiledServer | null>();
  private readonly sink: DiagnosticSink;
  private readonly files: ServerFiles;

  constructor(sink: DiagnosticSink, files: ServerFiles) {
    this.sink = sink;
    this.files = files;
  }

  /** The agent's `servers:` list, compiled; every problem is reported against the agent file. */
  compileRefs(agent: AgentView, list: unknown): CompiledServerRef[] {
    if (!Array.isArray(list)) return [];
    const file = agent.file;
    const err = (path: DataPath, msg: string, part: "key" | "value" = "value") =>
      this.sink.error(file.display, file.at(path, part), msg);
    const refs: CompiledServerRef[] = [];
    const names = new Map<string, number>();
    list.forEach((raw, i) => {
      if (!isObject(raw)) return;
      const at = (...rest: Array<string | number>): DataPath => ["servers", i, ...rest];
      const name = typeof raw.name === "string" ? raw.name : null;
      if (name !== null) {
        const first = names.get(name);
        if (first !== undefined)
          err(at("name"), `server name \`${name}\` is used twice in this agent (also servers[${first}])`);
        else names.set(name, i);
      }
      if (typeof raw.path !== "string") return;
      const abs = resolve(dirname(file.abs), raw.path);
      if (!existsSync(abs) || !statSync(abs).isFile()) {
        err(
          at("path"),
          `tool server file \`${raw.path}\` not found (relative to this agent file)${projectRootHint(file.abs, raw.path)}`,
        );
        return;
      }
      if (!abs.endsWith(".server.yaml")) {
        this.sink.warning(
          file.display,
          file.at(at("path")),
          `\`${raw.path}\`: tool server files are named \`*.server.yaml\``,
        );
      }
      if (!this.cache.has(abs)) this.cache.set(abs, this.compileServer(this.files.load(abs)));
      const server = this.cache.get(abs);
      if (!server || name === null) return;

      const params = this.refParams(agent, server, raw.params, at("params"), at());
      let allow: CompiledAllowEntry[] | null = null;
      if (isObject(raw.access) && Array.isArray(raw.access.allowlist)) {
        allow = this.allowlist(agent, raw.access.allowlist, at("access", "allowlist"));
      } else if (raw.access === undefined) {
        this.sink.warning(
          file.display,
          file.at(at("name")),
          `server \`${name}\` has no \`access.allowlist\`: the agent may call every tool the server offers`,
        );
      }
      refs.push({ name, server, params, allow });
    });
    return refs;
  }

  private refParams(
    agent: AgentView,
    server: CompiledServer,
    given: unknown,
    path: DataPath,
    refPath: DataPath,
  ): Record<string, Template> {
    const file = agent.file;
    const out: Record<string, Template> = {};
    const declared = Object.keys(server.params);
    if (isObject(given)) {
      for (const [key, value] of Object.entries(given)) {
        const p = [...path, key];
        if (!Object.hasOwn(server.params, key)) {
          this.sink.error(
            file.display,
            file.at(p, "key"),
            `server \`${server.name}\` declares no param \`${key}\`${hint(key, declared)}${declared.length > 0 ? ` (it declares ${declared.map((d) => `\`${d}\``).join(", ")})` : ""}`,
          );
          continue;
        }
        const read: string[] = [];
        out[key] = this.agentTemplate(agent, value, p, `\`params.${key}\``, read);
        const open = read.filter((name) => !agent.secretParams.has(name));
        if (server.params[key]?.secret && open.length > 0) {
          // ktsu's rule: a secret server param is fed from secret agent params only; an unmarked
          // param would reach the model (the default prompt sends the params as JSON).
          this.sink.error(
            file.display,
            file.at(p),
            `\`${key}\` is a secret param of server \`${server.name}\` but reads agent param ${open.map((n) => `\`${n}\``).join(", ")}, which is not \`secret: true\`: mark it \`secret: true\` in the agent's \`params.schema\` (else the model could see it)`,
          );
        }
        if (server.params[key]?.secret && out[key]?.t === "lit") {
          this.sink.warning(
            file.display,
            file.at(p),
            `\`${key}\` is a secret param of server \`${server.name}\` but gets a literal: pass it as a workflow step param (\`{{ env.X }}\` there) through \`{{ params.X }}\``,
          );
        }
      }
    }
    for (const [key, decl] of Object.entries(server.params)) {
      if (!(key in out) && decl.default === undefined) {
        this.sink.error(
          file.display,
          file.at(isObject(given) ? path : refPath, isObject(given) ? "key" : "value"),
          `server \`${server.name}\` needs param \`${key}\` (it has no default); give it under \`params\``,
        );
      }
    }
    return out;
  }

  /** A value in an agent file that may read the agent's own params (and nothing else). */
  private agentTemplate(
    agent: AgentView,
    value: unknown,
    path: DataPath,
    what: string,
    read: string[] = [],
  ): Template {
    const file = agent.file;
    const err = (msg: string) => this.sink.error(file.display, file.at(path), msg);
    if (typeof value === "string" && /^env:[A-Za-z_]/.test(value.trim())) {
      err(
        `${what}: agent files never read env. Pass the value as a workflow step param (\`{{ env.X }}\` there) and use \`{{ params.X }}\` here`,
      );
      return { t: "lit", v: null };
    }
    return compileTemplate(value, path, {
      expr: (e) => {
        const c = checkExpression(e, []);
        if (!c.ok) {
          err(`${what}: invalid JMESPath in \`{{ ${e} }}\`: ${c.error}`);
          return null;
        }
        for (const p of rootPaths(c.ast)) {
          if (p[0] === "env") {
            err(
              `${what}: agent files never read env. Pass the value as a workflow step param (\`{{ env.X }}\` there) and use \`{{ params.X }}\` here`,
            );
          } else if (p[0] !== "params") {
            err(`${what}: \`{{ ${e} }}\` can only read the agent's \`params\`, not \`${p[0] ?? "$"}\``);
          } else if (p[1] !== undefined && agent.params !== null && !agent.params.has(p[1])) {
            err(
              `${what}: the agent declares no param \`${p[1]}\` in \`params.schema\`${hint(p[1], agent.params)}`,
            );
          } else if (p[1] !== undefined) {
            read.push(p[1]);
          }
        }
        return c.text;
      },
      malformed: (msg) => err(`${what}: ${msg}`),
    });
  }

  private allowlist(agent: AgentView, list: unknown[], path: DataPath): CompiledAllowEntry[] {
    const file = agent.file;
    const out: CompiledAllowEntry[] = [];
    list.forEach((entry, j) => {
      const p = [...path, j];
      const pattern =
        typeof entry === "string"
          ? entry
          : isObject(entry) && typeof entry.name === "string"
            ? entry.name
            : null;
      if (pattern === null) return;
      if (!isAllowPattern(pattern)) {
        this.sink.error(
          file.display,
          file.at(typeof entry === "string" ? p : [...p, "name"]),
          `allowlist entry \`${pattern}\`: write an exact tool name, \`prefix*\` (one \`*\`, at the end) or \`*\``,
        );
        return;
      }
      const approval =
        isObject(entry) && isObject(entry.require_approval)
          ? this.policy(agent, entry.require_approval, [...p, "require_approval"])
          : null;
      out.push({ pattern, approval });
    });
    return out;
  }

  private policy(agent: AgentView, raw: Obj, path: DataPath): CompiledApprovalPolicy {
    const file = agent.file;
    let timeoutS: number | null = null;
    if (raw.timeout !== undefined) {
      timeoutS = parseDuration(raw.timeout);
      if (timeoutS === null) {
        this.sink.error(
          file.display,
          file.at([...path, "timeout"]),
          `\`timeout\` must be a duration such as \`30m\`, \`2h\`, \`1h30m\`, \`90s\`, or a number of seconds; got \`${String(raw.timeout)}\``,
        );
      }
    }
    let notify: CompiledApprovalPolicy["notify"] = null;
    if (isObject(raw.notify) && typeof raw.notify.url === "string") {
      const url = this.agentTemplate(agent, raw.notify.url, [...path, "notify", "url"], "`notify.url`");
      if (url.t === "lit" && typeof url.v === "string" && !isHttpUrl(url.v)) {
        // Else the notification would silently never be sent.
        this.sink.error(
          file.display,
          file.at([...path, "notify", "url"]),
          `\`notify.url\` must be an absolute http(s) URL (or \`{{ params.X }}\` of the agent), got \`${url.v}\``,
        );
      }
      let signSecret: Template | null = null;
      const sign = raw.notify.sign;
      if (isObject(sign) && typeof sign.secret === "string") {
        signSecret = this.agentTemplate(
          agent,
          sign.secret,
          [...path, "notify", "sign", "secret"],
          "`notify.sign.secret`",
        );
        if (signSecret.t !== "expr") {
          this.sink.error(
            file.display,
            file.at([...path, "notify", "sign", "secret"]),
            "`notify.sign.secret` must be `{{ params.X }}` of the agent (the key comes from a workflow step param)",
          );
        }
      }
      notify = { url, signSecret };
    }
    return {
      onReject: raw.on_reject === "recover" ? "recover" : "fail",
      timeoutS,
      timeoutBehavior: raw.timeout_behavior === "reject" ? "reject" : "fail",
      notify,
    };
  }

  private compileServer(file: SourceFile): CompiledServer | null {
    if (file.data === null) return null;
    checkStructure(file, "serverFile", this.sink);
    const d = file.data;
    if (!isObject(d)) return null;
    const err = (path: DataPath, msg: string) => this.sink.error(file.display, file.at(path), msg);

    const params: Record<string, CompiledServerParam> = {};
    if (isObject(d.params)) {
      for (const [name, decl] of Object.entries(d.params)) {
        const p = isObject(decl) ? decl : {};
        params[name] = {
          secret: p.secret === true,
          ...(p.default !== undefined ? { default: p.default as Json } : {}),
          description: typeof p.description === "string" ? p.description : null,
        };
      }
    }
    const declared = new Set(Object.keys(params));
    /** A server-file value: `{{ params.X }}` of the server's declared params only. */
    const own = (value: unknown, path: DataPath, what: string): Template => {
      if (typeof value === "string" && /^env:[A-Za-z_]/.test(value.trim())) {
        err(
          path,
          `${what}: server files never read env. Declare a param (\`secret: true\` for a secret) and pass it from the agent`,
        );
        return { t: "lit", v: null };
      }
      return compileTemplate(value, path, {
        expr: (e) => {
          const c = checkExpression(e, []);
          if (!c.ok) {
            err(path, `${what}: invalid JMESPath in \`{{ ${e} }}\`: ${c.error}`);
            return null;
          }
          for (const p of rootPaths(c.ast)) {
            if (p[0] === "env") {
              err(
                path,
                `${what}: server files never read env. Declare a param (\`secret: true\` for a secret) and pass it from the agent`,
              );
            } else if (p[0] !== "params") {
              err(
                path,
                `${what}: \`{{ ${e} }}\` can only read the server's \`params\`, not \`${p[0] ?? "$"}\``,
              );
            } else if (p[1] !== undefined && !declared.has(p[1])) {
              err(
                path,
                `${what}: the server declares no param \`${p[1]}\` under \`params\`${hint(p[1], declared)}`,
              );
            }
          }
          return c.text;
        },
        malformed: (msg) => err(path, `${what}: ${msg}`),
      });
    };

    const url = own(typeof d.url === "string" ? d.url : "", ["url"], "`url`");
    if (url.t === "lit" && typeof url.v === "string" && url.v !== "" && !/^https?:\/\//i.test(url.v)) {
      err(["url"], "`url` must be an http(s) URL of the MCP endpoint");
    }
    const auth = compileServerAuth(d.auth, params, own, err);
    return {
      key: file.key,
      name: typeof d.name === "string" ? d.name : file.key,
      description: typeof d.description === "string" ? d.description : null,
      url,
      auth,
      params,
      timeoutS: typeof d.timeout_s === "number" ? d.timeout_s : DEFAULT_TOOL_TIMEOUT_S,
    };
  }
}

export type { AgentView };
