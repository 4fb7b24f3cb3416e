/**
 * `{{ }}` substitution at run time (docs/file-format.md "Substitution"). The compiler has already
 * split every templated value into a Template tree, so rendering is a walk: a lone `{{ e }}`
 * keeps the JSON type of its value, mixed text always becomes a string, and parts of a webhook
 * URL after its first `?` arrive marked `encode` so user values cannot inject query syntax.
 */
import type { Json, JsonObject, Template } from "../bundle.ts";
import { evaluate } from "./expressions.ts";
import { setOwn } from "./transform-ops.ts";
import type { EvalScope } from "./types.ts";

/** The value an expression sees: exactly the scope's namespaces, nothing else. */
export function expressionData(scope: EvalScope): JsonObject {
  const data: JsonObject = {
    params: scope.params,
    env: scope.env,
    step: scope.step,
    request: scope.request ?? null,
  };
  // Only a fan-out item's substitutions see these (the compiler allows them nowhere else).
  if (scope.item !== undefined) data.item = scope.item;
  if (scope.item_index !== undefined) data.item_index = scope.item_index;
  // Only a compensation sees these (docs/file-format.md, "Compensation").
  if (scope.output !== undefined) data.output = scope.output;
  if (scope.error !== undefined) data.error = scope.error;
  return data;
}

/** How a value reads inside a string: null is empty, strings as is, anything else compact JSON. */
export function stringify(v: Json): string {
  if (v === null) return "";
  if (typeof v === "string") return v;
  return JSON.stringify(v);
}

/** Lone surrogates (legal in a JSON string, not Unicode text) become U+FFFD, as the URL parser does. */
function wellFormed(text: string): string {
  return text.replace(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, "\uFFFD");
}

function renderWith(t: Template, data: JsonObject, url = false): Json {
  switch (t.t) {
    case "lit":
      return t.v;
    case "expr":
      return evaluate(t.e, data);
    case "concat": {
      let out = "";
      for (const part of t.parts) {
        if (typeof part === "string") {
          out += part;
          continue;
        }
        const text = stringify(evaluate(part.e, data));
        // In a URL the first `?` may also come from an inserted value (a base URL with a query).
        const encode = part.encode === true || (url && out.includes("?"));
        out += encode ? encodeURIComponent(wellFormed(text)) : text;
      }
      return out;
    }
    case "arr":
      return t.items.map((item) => renderWith(item, data));
    case "obj": {
      const out: JsonObject = {};
      for (const [key, value] of t.entries) setOwn(out, key, renderWith(value, data));
      return out;
    }
  }
}

/** Renders a template against `{params, env, step}`; expression failures are expression_error. */
export function render(t: Template, scope: EvalScope): Json {
  return renderWith(t, expressionData(scope));
}

/**
 * Renders a template over a scope of the caller's own (a protocol trigger's request or finished run,
 * docs/protocols.md): `data` is exactly what its expressions see (the compiler has checked which
 * roots they read).
 */
export function renderOver(t: Template, data: JsonObject): Json {
  return renderWith(t, data);
}

/**
 * Renders a webhook URL: every value inserted after the first `?` of the URL is percent-encoded,
 * whether that `?` is literal text (marked `encode` at build time) or came from an earlier
 * inserted value, e.g. `{{ env.HOOK_URL }}&thread={{ params.thread }}` with a HOOK_URL that
 * carries its own query.
 */
export function renderUrl(t: Template, scope: EvalScope): Json {
  return renderWith(t, expressionData(scope), true);
}
