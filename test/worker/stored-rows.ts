/**
 * A run's rows as its object stores them, the definition aside: whether a run keeps its definition
 * (a `def` row, or inside `run`) or only its version depends on whether the definition store had
 * answered for that version in this isolate yet (docs/operations.md, "Definitions"), which no
 * test of the rows themselves should depend on.
 */
import { runInDurableObject } from "cloudflare:test";

export interface StoredRows {
  /** Every key but `def`, sorted. */
  keys: string[];
  /** Where the definition is: its own row, inside the `run` row, or only its version there. */
  definition: "row" | "inside" | "version" | "none";
}

export function storedRows(stub: DurableObjectStub): Promise<StoredRows> {
  return runInDurableObject(stub, (_o, state: DurableObjectState) => {
    const all = [...state.storage.kv.list<string>()];
    const run = all.find(([k]) => k === "run")?.[1];
    const doc = run ? (JSON.parse(run) as { doc: { def?: unknown; def_ref?: string } }).doc : null;
    const definition = all.some(([k]) => k === "def")
      ? "row"
      : doc?.def
        ? "inside"
        : doc?.def_ref
          ? "version"
          : "none";
    return {
      keys: all
        .map(([k]) => k)
        .filter((k) => k !== "def")
        .sort(),
      definition,
    };
  });
}
