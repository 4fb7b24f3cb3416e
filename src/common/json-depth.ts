/**
 * How deep JSON may nest before anything walks it: everything downstream of a parse (hashing,
 * masking, schema validation, storage, the envelope) walks values recursively, and 1 MiB of `[` is
 * a million levels, which overflows the stack (docs/errors-and-limits.md). The check is a linear
 * scan of the text, made before `JSON.parse`, so a deep document costs nothing more than its read.
 */
export const MAX_JSON_DEPTH = 128;

/** Bracket depth outside strings; a linear scan that stops as soon as `max` is passed. */
export function nestsDeeperThan(text: string, max: number = MAX_JSON_DEPTH): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) {
      inString = true;
    } else if (c === 0x7b || c === 0x5b) {
      if (++depth > max) return true;
    } else if (c === 0x7d || c === 0x5d) {
      depth--;
    }
  }
  return false;
}

/**
 * The same for a value already parsed (a queue message sent as a structured clone): whether its
 * arrays and objects nest deeper than `max`, walked with a stack of its own (never the call stack).
 */
export function valueNestsDeeperThan(value: unknown, max: number = MAX_JSON_DEPTH): boolean {
  const stack: Array<[unknown, number]> = [[value, 0]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop() as [unknown, number];
    if (v === null || typeof v !== "object") continue;
    if (depth + 1 > max) return true;
    const children = Array.isArray(v) ? v : v instanceof Map ? [...v.values()] : Object.values(v);
    for (const c of children) stack.push([c, depth + 1]);
  }
  return false;
}
