/**
 * The plain values of the bundle (src/bundle.ts): JSON, JSON Schemas, and templates (a value with
 * `{{ }}` substitutions, parsed once by the compiler).
 */

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

/** An `env` entry: a variable the file reads from the Worker's environment. */
export interface EnvDecl {
  name: string;
  /** Defaults to true when the file omits it. */
  secret: boolean;
}

/** A JSON Schema object (draft 2020-12 unless `$schema` says otherwise). */
export type JsonSchema = JsonObject | boolean;

/**
 * A value with `{{ }}` substitutions, pre-parsed. Plain JSON without any `{{` is `lit`.
 * - `expr`: a string that, trimmed, is exactly one `{{ e }}`: keeps the value's JSON type.
 * - `concat`: text mixed with expressions: always a string (null -> "", non-strings -> compact
 *   JSON). A part with `encode: true` (a webhook URL after its first `?`) is passed through
 *   encodeURIComponent.
 */
export type Template =
  | { t: "lit"; v: Json }
  | { t: "expr"; e: string }
  | { t: "concat"; parts: Array<string | { e: string; encode?: true }> }
  | { t: "arr"; items: Template[] }
  | { t: "obj"; entries: Array<[string, Template]> };
