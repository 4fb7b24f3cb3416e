/**
 * What an expression can read of its root (the run's scope: `params`, `env`, `step`, `request`,
 * `item`, …): the static field paths it starts from, and `whole` when it can read anything, so that
 * a rule about what a value is built from (a secret never goes to a host the caller picks,
 * docs/file-format.md "Env and secrets") holds for every way of writing the value. Sound: `@` or
 * `$` not followed by a field, `*` or `[…]` over the root, and any node the walk does not know
 * count as reading the whole root; the right of a pipe or projection and an `&expr` read only what
 * their left side already read; a `$` inside them is the root again.
 */
import type { AstNode } from "./expressions.ts";

export interface RootReads {
  paths: string[][];
  whole: boolean;
}

export function rootReads(ast: AstNode): RootReads {
  const out: RootReads = { paths: [], whole: false };
  readsOf(ast, true, out);
  return out;
}

/** Node types that read nothing of their own, or only what their children read where they stand. */
const READS_THROUGH_CHILDREN = new Set([
  "Function",
  "MultiSelectList",
  "MultiSelectHash",
  "KeyValuePair",
  "Comparator",
  "AndExpression",
  "OrExpression",
  "NotExpression",
  "Arithmetic",
  "Unary",
  "Ternary",
  "Flatten",
  "LetExpression",
  "Binding",
]);
const READS_NOTHING = new Set(["Literal", "Variable", "Index", "Slice"]);

function readsOf(node: AstNode | undefined, atRoot: boolean, out: RootReads): void {
  // Stryker disable next-line LogicalOperator,ConditionalExpression: every call passes an AST node or undefined (a node's other values are filtered below)
  if (!node || typeof node !== "object") return;
  switch (node.type) {
    case "Field":
    case "Current":
    case "Identity":
    // Stryker disable next-line StringLiteral: a bare `$` reads the whole scope on either path (here, or as a node this walk does not know)
    case "Root":
    case "Subexpression":
    case "IndexExpression": {
      const c = rootChain(node, atRoot);
      if (c !== null) {
        if (c.length === 0) out.whole = true;
        else out.paths.push(c);
      }
      readsOffChain(node, atRoot, out);
      return;
    }
    case "Projection":
    case "ValueProjection":
    case "Pipe":
    case "FilterProjection":
      readsOf(node.left as AstNode, atRoot, out);
      readsOf(node.right as AstNode, false, out);
      readsOf(node.condition as AstNode | undefined, false, out);
      return;
    case "ExpressionReference":
      readsOf(node.child as AstNode, false, out);
      return;
    default:
      if (READS_NOTHING.has(node.type)) return;
      if (!READS_THROUGH_CHILDREN.has(node.type)) {
        out.whole = true; // a node this walk does not know: the worst case
        return;
      }
      for (const v of Object.values(node)) {
        if (Array.isArray(v)) {
          for (const c of v) readsOf(c as AstNode, atRoot, out);
          continue;
        }
        // Stryker disable next-line ConditionalExpression: readsOf skips a value that is not an object, and every object in a node the parser makes is a node
        if (v && typeof v === "object" && "type" in v) readsOf(v as AstNode, atRoot, out);
      }
  }
}

/** The static path a chain reads from the root (`[]`: the root itself), or null when it does not start there. */
function rootChain(node: AstNode, atRoot: boolean): string[] | null {
  switch (node.type) {
    case "Field":
      return atRoot ? [node.name as string] : null;
    case "Current":
    case "Identity":
      return atRoot ? [] : null;
    case "Root":
      return [];
    case "Subexpression": {
      const left = rootChain(node.left as AstNode, atRoot);
      if (left === null || !chainOpen(node.left as AstNode)) return left;
      const right = node.right as AstNode;
      // Stryker disable next-line ConditionalExpression,StringLiteral: leftmostField gives a Field its own name too
      if (right.type === "Field") return [...left, right.name as string];
      // `x.items[0]`, `x.items[*].id`, `x.items[]`: what the index or projection starts from is
      // one more field of the chain; everything after it reads only that field's value.
      const inner = leftmostField(right);
      return inner === null ? left : [...left, inner];
    }
    case "IndexExpression":
      return rootChain(node.left as AstNode, atRoot);
    default:
      return null;
  }
}

/** The field an index, slice, projection or flatten on the right of a `.` starts from, if it is one. */
function leftmostField(node: AstNode): string | null {
  let at: AstNode | undefined = node;
  while (at && STARTS_FROM_LEFT.has(at.type)) at = (at.left ?? at.child) as AstNode | undefined;
  // Stryker disable next-line OptionalChaining: every node of STARTS_FROM_LEFT the parser makes has its left or child
  return at?.type === "Field" ? (at.name as string) : null;
}

// Stryker disable StringLiteral: this parser never starts the right of a `.` with a filter, a `*`
// over values or a flatten (they wrap the whole chain instead); without them the path would only
// be shorter (coarser, still sound)
const STARTS_FROM_LEFT = new Set([
  "IndexExpression",
  "Projection",
  "FilterProjection",
  "ValueProjection",
  "Flatten",
]);
// Stryker restore StringLiteral

/** Whether a chain still names one field path (no index, projection or function in it yet). */
function chainOpen(node: AstNode): boolean {
  switch (node.type) {
    case "Field":
    case "Current":
    // Stryker disable next-line StringLiteral: the parser writes a leading `@` as Current; Identity is never the left of a `.`
    case "Identity":
    case "Root":
      return true;
    case "Subexpression":
      return chainOpen(node.left as AstNode) && (node.right as AstNode).type === "Field";
    // Stryker disable next-line ConditionalExpression: falling out of the switch returns undefined, which is as false
    default:
      return false;
  }
}

/** The reads of what hangs off a chain: its indexes, the non-field right sides, a function at its start. */
function readsOffChain(node: AstNode, atRoot: boolean, out: RootReads): void {
  if (node.type === "Subexpression" || node.type === "IndexExpression") {
    readsOffChain(node.left as AstNode, atRoot, out);
    readsOf(node.right as AstNode, false, out);
    return;
  }
  if (node.type === "Field" || node.type === "Current" || node.type === "Identity" || node.type === "Root")
    return;
  readsOf(node, atRoot, out);
}
