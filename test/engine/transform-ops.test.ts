/**
 * Transform operations as docs/file-format.md describes them: deep merge, and map / filter / sort /
 * flatten / deduplicate / merge applied left to right, the current item as the JMESPath root.
 */
import { describe, expect, it } from "vitest";
import type { Json, TransformOp } from "../../src/bundle.ts";
import { applyOps, deepMerge } from "../../src/engine/transform-ops.ts";
import { StepError } from "../../src/engine/types.ts";

const noSteps = { step: {} };

describe("deepMerge", () => {
  it("merges objects recursively, the right side winning on conflicts", () => {
    expect(deepMerge({ a: 1, n: { x: 1, y: 1 } }, { b: 2, n: { y: 2, z: 2 } })).toEqual({
      a: 1,
      b: 2,
      n: { x: 1, y: 2, z: 2 },
    });
  });

  it("concatenates arrays", () => {
    expect(deepMerge({ tags: ["a"] }, { tags: ["b", "c"] })).toEqual({ tags: ["a", "b", "c"] });
  });

  it("lets the right side win when the kinds differ", () => {
    expect(deepMerge({ a: { x: 1 } }, { a: [1] })).toEqual({ a: [1] });
    expect(deepMerge({ a: 1 }, { a: null })).toEqual({ a: null });
    expect(deepMerge([1], { a: 1 })).toEqual({ a: 1 });
  });

  it("leaves both inputs unchanged", () => {
    const a = { n: { x: 1 }, l: [1] };
    const b = { n: { y: 2 }, l: [2] };
    deepMerge(a, b);
    expect(a).toEqual({ n: { x: 1 }, l: [1] });
    expect(b).toEqual({ n: { y: 2 }, l: [2] });
  });

  it("stores a __proto__ key as data without touching the prototype", () => {
    const b = JSON.parse('{"__proto__": {"polluted": true}}') as Json;
    const merged = deepMerge({ a: 1 }, b) as Record<string, unknown>;
    expect(Object.keys(merged)).toEqual(["a", "__proto__"]);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.getPrototypeOf(merged)).toBe(Object.prototype);
  });
});

describe("applyOps", () => {
  const tickets = [
    { id: 1, priority: 3, title: "b", tags: ["x"] },
    { id: 2, priority: 1, title: "a", tags: ["y", "z"] },
    { id: 3, priority: null, title: "c", tags: [] },
    { id: 4, priority: 1, title: "d", tags: ["x"] },
  ];

  it("maps each item through the expression with the item as root", () => {
    expect(applyOps(tickets, [{ op: "map", expr: "title" }], noSteps)).toEqual(["b", "a", "c", "d"]);
  });

  it("builds new objects in map", () => {
    expect(applyOps([{ a: 1 }], [{ op: "map", expr: "{value: a, doubled: a * `2`}" }], noSteps)).toEqual([
      { value: 1, doubled: 2 },
    ]);
  });

  it("keeps the items whose filter expression is truthy", () => {
    expect(
      applyOps(
        tickets,
        [
          { op: "filter", expr: "tags" },
          { op: "map", expr: "id" },
        ],
        noSteps,
      ),
    ).toEqual([1, 2, 4]);
  });

  it("does not let map see params, env or steps", () => {
    const out = applyOps([{ a: 1 }], [{ op: "map", expr: "params" }], { step: { params: "leak" } });
    expect(out).toEqual([null]);
  });

  it("treats a single value as a one-item list in map and filter", () => {
    expect(applyOps({ a: 5 }, [{ op: "map", expr: "a" }], noSteps)).toEqual([5]);
    expect(applyOps({ a: 5 }, [{ op: "filter", expr: "a > `1`" }], noSteps)).toEqual([{ a: 5 }]);
  });

  it("sorts numbers numerically, ascending, stable, nulls last", () => {
    const out = applyOps(
      tickets,
      [
        { op: "sort", field: "priority", order: "asc" },
        { op: "map", expr: "id" },
      ],
      noSteps,
    );
    expect(out).toEqual([2, 4, 1, 3]);
  });

  it("sorts descending, keeping equal keys in their order and nulls last", () => {
    const out = applyOps(
      tickets,
      [
        { op: "sort", field: "priority", order: "desc" },
        { op: "map", expr: "id" },
      ],
      noSteps,
    );
    expect(out).toEqual([1, 2, 4, 3]);
  });

  it("sorts numbers as numbers, not as text", () => {
    const out = applyOps(
      [{ n: 10 }, { n: 9 }, { n: 100 }],
      [{ op: "sort", field: "n", order: "asc" }],
      noSteps,
    );
    expect(out).toEqual([{ n: 9 }, { n: 10 }, { n: 100 }]);
  });

  it("sorts strings by text and puts items missing the field last", () => {
    const items: Json[] = [{ t: "b" }, {}, { t: "a" }, { t: "C" }];
    const out = applyOps(items, [{ op: "sort", field: "t", order: "asc" }], noSteps);
    expect(out).toEqual([{ t: "C" }, { t: "a" }, { t: "b" }, {}]);
  });

  it("flattens one level only", () => {
    expect(applyOps([[1, [2]], 3, [4]], [{ op: "flatten" }], noSteps)).toEqual([1, [2], 3, 4]);
  });

  it("deduplicates by field, keeping the first", () => {
    const out = applyOps(
      tickets,
      [
        { op: "deduplicate", field: "priority" },
        { op: "map", expr: "id" },
      ],
      noSteps,
    );
    expect(out).toEqual([1, 2, 3]);
  });

  it("deduplicates by object-valued fields regardless of key order", () => {
    const items: Json[] = [
      { k: { a: 1, b: 2 }, n: 1 },
      { k: { b: 2, a: 1 }, n: 2 },
      { k: { a: 2 }, n: 3 },
    ];
    const out = applyOps(
      items,
      [
        { op: "deduplicate", field: "k" },
        { op: "map", expr: "n" },
      ],
      noSteps,
    );
    expect(out).toEqual([1, 3]);
  });

  it("keeps every item that lacks the deduplicate field", () => {
    const out = applyOps(
      [{ id: 1 }, { x: 1 }, { x: 2 }, { id: 1 }],
      [{ op: "deduplicate", field: "id" }],
      noSteps,
    );
    expect(out).toEqual([{ id: 1 }, { x: 1 }, { x: 2 }]);
  });

  it("merges the named steps' outputs into the current value, in order", () => {
    const scope = { step: { a: { x: 1, list: [1] }, b: { x: 2, y: 2, list: [2] } } };
    const out = applyOps({ base: true, list: [0] }, [{ op: "merge", steps: ["a", "b"] }], scope);
    expect(out).toEqual({ base: true, x: 2, y: 2, list: [0, 1, 2] });
  });

  it("runs the ops left to right, each on the previous result", () => {
    const ops: TransformOp[] = [
      { op: "map", expr: "tags" },
      { op: "flatten" },
      { op: "deduplicate", field: "@" },
      { op: "sort", field: "@", order: "desc" },
    ];
    expect(applyOps(tickets, ops, noSteps)).toEqual(["z", "y", "x"]);
  });

  it("returns the input unchanged with no ops", () => {
    expect(applyOps({ a: 1 }, [], noSteps)).toEqual({ a: 1 });
  });

  it("fails with expression_error when an item expression cannot be evaluated", () => {
    expect(() => applyOps([{ a: "x" }], [{ op: "map", expr: "abs(a)" }], noSteps)).toThrow(StepError);
  });
});
