/**
 * A server file's `auth` (docs/agents-and-tools.md, "Tool servers" and "OAuth"): a static header
 * (`secret`, `header`, `scheme: raw | bearer`) or OAuth (`scheme: oauth` with `client_id` and a
 * `client_secret` or a `refresh_token`, optional `scopes`). Every secret must be `{{ params.X }}` of
 * a param the server declares `secret: true`, so it is masked wherever it is shown.
 */
import type { CompiledServerAuth, CompiledServerParam, Template } from "../bundle.ts";
import { isObject } from "../common/guards.ts";
import type { DataPath } from "./yaml-source.ts";

/** The `auth` fields only `scheme: oauth` takes. */
const OAUTH_FIELDS = ["client_id", "client_secret", "refresh_token", "scopes"];

export function compileServerAuth(
  raw: unknown,
  params: Record<string, CompiledServerParam>,
  own: (value: unknown, path: DataPath, what: string) => Template,
  err: (path: DataPath, msg: string) => void,
): CompiledServerAuth | null {
  if (!isObject(raw)) return null;
  /** A server-file secret: `{{ params.NAME }}` of a param declared `secret: true`. */
  const secretParam = (value: unknown, field: string): Template | null => {
    if (typeof value !== "string") return null;
    const t = own(value, ["auth", field], `\`auth.${field}\``);
    const m = /^\{\{\s*params\.([A-Za-z_][A-Za-z0-9_]*)\s*\}\}$/.exec(value.trim());
    if (!m) {
      err(
        ["auth", field],
        `\`auth.${field}\` must be \`{{ params.NAME }}\` of a param declared with \`secret: true\``,
      );
    } else if (params[m[1] as string] && !params[m[1] as string]?.secret) {
      err(
        ["auth", field],
        `\`auth.${field}\` reads param \`${m[1]}\`, which is not declared \`secret: true\` (it would be shown unmasked)`,
      );
    }
    return t;
  };
  if (raw.scheme === "oauth") {
    if (typeof raw.client_id !== "string") err(["auth"], "`auth` with `scheme: oauth` needs `client_id`");
    if (raw.secret !== undefined) {
      err(
        ["auth", "secret"],
        "`auth.secret` is for `scheme: bearer` or `raw`; OAuth takes `client_secret` or `refresh_token`",
      );
    }
    const clientSecret = secretParam(raw.client_secret, "client_secret");
    const refreshToken = secretParam(raw.refresh_token, "refresh_token");
    if (clientSecret === null && refreshToken === null) {
      err(
        ["auth"],
        "`auth` with `scheme: oauth` needs `client_secret` (client credentials) or `refresh_token` (a grant a person approved once)",
      );
    }
    return {
      scheme: "oauth",
      clientId: own(
        typeof raw.client_id === "string" ? raw.client_id : "",
        ["auth", "client_id"],
        "`auth.client_id`",
      ),
      clientSecret,
      refreshToken,
      scopes: Array.isArray(raw.scopes) ? raw.scopes.filter((x): x is string => typeof x === "string") : [],
    };
  }
  const oauthField = OAUTH_FIELDS.find((k) => raw[k] !== undefined);
  if (oauthField !== undefined) {
    err(
      ["auth", oauthField],
      `\`${oauthField}\` is for \`scheme: oauth\` (\`client_id\`, \`client_secret\`, \`refresh_token\`, \`scopes\`)`,
    );
    return null;
  }
  if (typeof raw.secret !== "string") {
    err(["auth"], "`auth` needs `secret` (or `scheme: oauth` with `client_id`)");
    return null;
  }
  const secret = secretParam(raw.secret, "secret") as Template;
  const header = typeof raw.header === "string" ? raw.header : "Authorization";
  const scheme = raw.scheme === "raw" ? "raw" : "bearer";
  return { header, scheme, secret };
}
