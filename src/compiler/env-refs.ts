/**
 * The `{{ env.NAME }}` form used where only a declared env var may appear (invoke.auth.secret,
 * webhook sign.secret, gateway api_key / base_url), and env declarations shared by workflow files
 * and gateway.yaml.
 */
import type { EnvDecl } from "../bundle.ts";
import type { DiagnosticSink } from "./diagnostics.ts";
import { hint } from "./did-you-mean.ts";
import type { DataPath, SourceFile } from "./yaml-source.ts";

const ENV_REF = /^\{\{\s*env\.([A-Za-z_][A-Za-z0-9_]*)\s*\}\}$/;

/** NAME of an exact `{{ env.NAME }}`, else null. */
export function envRefName(v: unknown): string | null {
  if (typeof v !== "string") return null;
  return ENV_REF.exec(v.trim())?.[1] ?? null;
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
