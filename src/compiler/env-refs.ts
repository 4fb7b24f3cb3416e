/**
 * The `{{ env.NAME }}` form used where only a declared env var may appear (invoke.auth.secret,
 * webhook sign.secret, gateway api_key / base_url), and env declarations shared by workflow files
 * and gateway.yaml.
 */
import type { EnvDecl } from "../bundle.ts";
import { hint } from "../common/did-you-mean.ts";
import type { DiagnosticSink } from "./diagnostics.ts";
import type { DataPath, SourceFile } from "./yaml-source.ts";

const ENV_REF = /^\{\{\s*env\.([A-Za-z_][A-Za-z0-9_]*)\s*\}\}$/;
/** ktsu's working files write `env:NAME` (the only form ktsu itself resolves in `invoke.auth.secret`). */
const ENV_SHORTHAND = /^env:([A-Za-z_][A-Za-z0-9_]*)$/;

/** NAME of an exact `{{ env.NAME }}` or of ktsu's whole-string `env:NAME`, else null. */
export function envRefName(v: unknown): string | null {
  if (typeof v !== "string") return null;
  return ENV_REF.exec(v.trim())?.[1] ?? envShorthandName(v);
}

/** NAME when `v` is exactly ktsu's `env:NAME`, else null. */
export function envShorthandName(v: unknown): string | null {
  if (typeof v !== "string") return null;
  return ENV_SHORTHAND.exec(v)?.[1] ?? null;
}

/** The warning for an `env:NAME` that is taken as `{{ env.NAME }}`. */
export function envShorthandWarning(name: string): string {
  return `\`env:${name}\` is ktsu's shorthand and is read as \`{{ env.${name} }}\`; write \`{{ env.${name} }}\``;
}

/**
 * Replaces every whole string `env:NAME` in `v` by `{{ env.NAME }}` where `take(name, path)` says
 * so (NAME is declared); other strings, `env:` ones included, stay as they are.
 */
export function expandEnvShorthand(
  v: unknown,
  path: DataPath,
  take: (name: string, path: DataPath) => boolean,
): unknown {
  if (typeof v === "string") {
    const name = envShorthandName(v);
    return name !== null && take(name, path) ? `{{ env.${name} }}` : v;
  }
  if (Array.isArray(v)) return v.map((x, i) => expandEnvShorthand(x, [...path, i], take));
  if (v && typeof v === "object") {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) {
      Object.defineProperty(out, k, {
        value: expandEnvShorthand(x, [...path, k], take),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
    return out;
  }
  return v;
}

/**
 * Reads an `env:` list: secret defaults to true (warned when omitted), duplicates are errors.
 * Structure (types, names) is checked by the format schema.
 */
export function readEnvDecls(file: SourceFile, list: unknown, sink: DiagnosticSink): EnvDecl[] {
  if (!Array.isArray(list)) return [];
  const out: EnvDecl[] = [];
  list.forEach((entry, i) => {
    if (!entry || typeof entry !== "object") return;
    const e = entry as { name?: unknown; secret?: unknown };
    if (typeof e.name !== "string") return;
    if (out.some((d) => d.name === e.name)) {
      sink.error(file.display, file.at(["env", i, "name"]), `env \`${e.name}\` is declared twice`);
      return;
    }
    if (e.secret === undefined) {
      sink.warning(
        file.display,
        file.at(["env", i]),
        `env \`${e.name}\` does not say \`secret:\`; it is treated as secret (masked). Write \`secret: true\` or \`secret: false\``,
      );
    }
    out.push({ name: e.name, secret: e.secret !== false });
  });
  return out;
}

/** Checks that `{{ env.NAME }}` at `path` names a declared var; returns NAME or null. */
export function declaredEnvRef(
  file: SourceFile,
  path: DataPath,
  value: unknown,
  declared: EnvDecl[],
  sink: DiagnosticSink,
): string | null {
  const name = envRefName(value);
  if (name === null) return null; // the format schema already reported the shape
  if (envShorthandName(value) !== null) sink.warning(file.display, file.at(path), envShorthandWarning(name));
  if (!declared.some((d) => d.name === name)) {
    sink.error(
      file.display,
      file.at(path),
      `\`env.${name}\` is not declared in this file's \`env\`${hint(
        name,
        declared.map((d) => d.name),
      )}`,
    );
    return null;
  }
  return name;
}
