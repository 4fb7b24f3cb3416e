/**
 * `{{ }}` substitution at run time (SPEC section 3 "Substitution"). The compiler has already
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

function renderWith(t: Template, data: JsonObject): Json {
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
        out += part.encode ? encodeURIComponent(wellFormed(text)) : text;
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
