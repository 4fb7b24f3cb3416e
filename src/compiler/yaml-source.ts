/**
 * Reads one YAML file and keeps its syntax tree next to the plain data, so every later check
 * can point at the exact line and column of the key or value it complains about. Checks work on
 * the plain data (`data`) and ask `at(path)` for a position only when they report.
 */
import { readFileSync } from "node:fs";
import { isAlias, isMap, isPair, isScalar, isSeq, type Node, parseDocument, visit } from "yaml";
import type { DiagnosticSink, Position } from "./diagnostics.ts";

/** A path into the data: object keys and array indexes. */
export type DataPath = ReadonlyArray<string | number>;

export interface SourceFile {
  /** Absolute path on disk. */
  abs: string;
  /** Path shown to the user in diagnostics. */
  display: string;
  /** Path relative to the workflows directory, with `/` separators (the bundle key). */
  key: string;
  /** The parsed content as plain JSON-like data (null when the file did not parse). */
  data: unknown;
  /** Position of the key (`part: "key"`) or value at `path`, or of the nearest existing parent. */
  at(path: DataPath, part?: "key" | "value"): Position;
}

const START: Position = { line: 1, col: 1 };

/** Loads and parses `abs`; YAML syntax errors are reported and leave `data` null. */
export function loadYaml(abs: string, display: string, key: string, sink: DiagnosticSink): SourceFile {
  const text = readFileSync(abs, "utf8");
  const doc = parseDocument(text, { prettyErrors: false, uniqueKeys: true });
  // Our own line index rather than yaml's LineCounter: that one does not know the line after a
  // final newline, so an error at the very end of a file pointed past the end of its last line.
  const lineStarts = [0];
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) === 0x0a) lineStarts.push(i + 1);
  const pos = (offset: number): Position => {
    const o = Math.max(0, Math.min(offset, text.length));
    let lo = 0;
    let hi = lineStarts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if ((lineStarts[mid] ?? 0) <= o) lo = mid;
      else hi = mid - 1;
    }
    return { line: lo + 1, col: o - (lineStarts[lo] ?? 0) + 1 };
  };

  const at = (path: DataPath, part: "key" | "value" = "value"): Position => {
    let node: unknown = doc.contents;
    let keyNode: Node | null = null;
    let best: Position = node && (node as Node).range ? pos((node as Node).range?.[0] ?? 0) : START;
    for (const segment of path) {
      let next: unknown;
      keyNode = null;
      if (isMap(node)) {
        const pair = node.items.find((p) => isPair(p) && keyText(p.key) === String(segment));
        if (!pair) return best;
        keyNode = isScalar(pair.key) || isMap(pair.key) || isSeq(pair.key) ? (pair.key as Node) : null;
        next = pair.value;
      } else if (isSeq(node) && typeof segment === "number") {
        next = node.items[segment];
      } else {
        return best;
      }
      const range = (next as Node | null)?.range;
      // An empty value (`flatten:`) has no useful range of its own: point at its key.
      if (next && range && range[1] > range[0]) best = pos(range[0]);
      else if (keyNode?.range) best = pos(keyNode.range[0]);
      else return best;
      node = next;
    }
    if (part === "key" && keyNode?.range) return pos(keyNode.range[0]);
    return best;
  };

  const file: SourceFile = { abs, display, key, data: null, at };
  if (doc.errors.length > 0) {
    for (const e of doc.errors) sink.error(display, pos(e.pos[0]), `YAML: ${firstLine(e.message)}`);
    return file;
  }
  // A mapping or a list as a key (`? [a, b]`, `{a: 1}: x`, an alias of one): no JSON object has one, and toJS
  // would turn it into a string and warn on the process. Say so where it stands, like a syntax error.
  let collectionKeys = 0;
  visit(doc, {
    Pair(_key, pair) {
      // An alias key (`*a : x`) stands for its anchor's node, which may be a collection too.
      const key = isAlias(pair.key) ? pair.key.resolve(doc) : pair.key;
      // A tagged scalar can be an object too: `!!binary` bytes, a `!!timestamp` Date.
      const objectScalar = isScalar(key) && key.value !== null && typeof key.value === "object";
      if (isMap(key) || isSeq(key) || objectScalar) {
        collectionKeys++;
        sink.error(
          display,
          pos((pair.key as Node).range?.[0] ?? 0),
          "YAML: a key must be text or a number, not a mapping, a list, binary data or a date",
        );
      }
    },
  });
  if (collectionKeys > 0) return file;
  try {
    file.data = doc.toJS({ maxAliasCount: 1000 }) ?? null;
  } catch (err) {
    // An alias without its anchor, or one that expands too much (a "billion laughs" file), is
    // only found while converting: report it like a syntax error.
    let at: Position = START;
    visit(doc, {
      Alias(_key, node) {
        if (node.range && node.resolve(doc) === undefined) {
          at = pos(node.range[0]);
          return visit.BREAK;
        }
      },
    });
    sink.error(display, at, `YAML: ${firstLine(err instanceof Error ? err.message : String(err))}`);
    return file;
  }
  // Checks skip a file whose data is null (it did not parse); an empty one must not slip through
  // that way, or a truncated workflow file would silently vanish from the bundle.
  if (file.data === null) sink.error(display, START, "the file is empty (or null): expected a mapping");
  return file;
}

function keyText(key: unknown): string {
  if (isScalar(key)) return String(key.value);
  return String(key);
}

function firstLine(message: string): string {
  return message.split("\n")[0] ?? message;
}
