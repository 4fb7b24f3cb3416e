/**
 * The operations of a transform step (docs/file-format.md "Transform step", ktsu-compatible), as
 * pure functions over JSON: deep merge, and `ops` applied left to right. In map / filter /
 * sort / deduplicate the current item is the JMESPath root, so an op never sees params, env
 * or other steps; only `merge` reads step outputs, and only its named ancestors'.
 */
import type { Json, JsonObject, TransformOp } from "../bundle.ts";
import { isObject } from "../common/guards.ts";
import { evaluate, isTruthy } from "./expressions.ts";
import type { EvalScope } from "./types.ts";

/**
 * Sets an own property even for the key `__proto__` (JSON.parse can produce one; a plain
 * assignment would change the prototype instead of storing the value).
 */
export function setOwn(target: JsonObject, key: string, value: Json): void {
  if (key === "__proto__") {
    Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  } else {
    target[key] = value;
  }
}

/** Objects merge recursively (right wins on conflicts), arrays concatenate, anything else: right wins. */
export function deepMerge(a: Json, b: Json): Json {
  if (Array.isArray(a) && Array.isArray(b)) return [...a, ...b];
  if (!isObject(a) || !isObject(b)) return b;
  const out: JsonObject = {};
  for (const [key, value] of Object.entries(a)) setOwn(out, key, value);
  for (const [key, value] of Object.entries(b)) {
    const left = Object.hasOwn(out, key) ? out[key] : undefined;
    setOwn(out, key, left === undefined ? value : deepMerge(left, value));
  }
  return out;
}

/** Array ops treat a single value as a one-item list. */
function asArray(v: Json): Json[] {
  return Array.isArray(v) ? v : [v];
}

/** Numbers compare numerically, everything else as text; the caller puts nulls last. */
function compareKeys(x: Json, y: Json): number {
  if (typeof x === "number" && typeof y === "number") return x - y;
  const sx = typeof x === "string" ? x : JSON.stringify(x);
  const sy = typeof y === "string" ? y : JSON.stringify(y);
  return sx < sy ? -1 : sx > sy ? 1 : 0;
}

function sortBy(items: Json[], field: string, order: "asc" | "desc"): Json[] {
  const keyed = items.map((item) => ({ item, key: evaluate(field, item) }));
  // Array.prototype.sort is stable; ties return 0 so equal keys keep their order in both directions.
  keyed.sort((x, y) => {
    if (x.key === null || y.key === null) return (x.key === null ? 1 : 0) - (y.key === null ? 1 : 0);
    const c = compareKeys(x.key, y.key);
    return order === "asc" ? c : -c;
  });
  return keyed.map((k) => k.item);
}

/** JSON with sorted object keys, so `{a,b}` and `{b,a}` are the same key. */
function canonical(v: Json): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(",")}]`;
  if (isObject(v)) {
    const keys = Object.keys(v).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonical(v[k] ?? null)}`).join(",")}}`;
  }
  return JSON.stringify(v);
}

/** Keeps the first item per key; items without the field are all kept (nothing to compare). */
function deduplicate(items: Json[], field: string): Json[] {
  const seen = new Set<string>();
  const out: Json[] = [];
  for (const item of items) {
    const key = evaluate(field, item);
    if (key === null) {
      out.push(item);
      continue;
    }
    const id = canonical(key);
    if (seen.has(id)) continue;
    seen.add(id);
    out.push(item);
  }
  return out;
}

/** Applies one op to the current value. */
export function applyOp(value: Json, op: TransformOp, scope: Pick<EvalScope, "step">): Json {
  switch (op.op) {
    case "map":
      return asArray(value).map((item) => evaluate(op.expr, item));
    case "filter":
      return asArray(value).filter((item) => isTruthy(evaluate(op.expr, item)));
    case "sort":
      return sortBy(asArray(value), op.field, op.order);
    case "flatten":
      return asArray(value).flatMap((item) => (Array.isArray(item) ? item : [item]));
    case "deduplicate":
      return deduplicate(asArray(value), op.field);
    case "merge": {
      let out = value;
      for (const id of op.steps) {
        const output = scope.step[id];
        if (output !== undefined) out = deepMerge(out, output);
      }
      return out;
    }
  }
}

/** Runs `ops` left to right, each on the previous result; expression failures are expression_error. */
export function applyOps(value: Json, ops: TransformOp[], scope: Pick<EvalScope, "step">): Json {
  let out = value;
  for (const op of ops) out = applyOp(out, op, scope);
  return out;
}
