/**
 * What the run store (run-store.ts) asks of definitions (docs/operations.md, "Definitions"),
 * synchronously: whether this isolate holds a version's definition, and whether the definition
 * store keeps it. definitions.ts gives a run's object its port; the workflow-test runner and
 * unit tests keep every definition inline.
 */
import type { Bundle } from "../../bundle.ts";

/** What the run store asks of definitions, synchronously. */
export interface DefinitionPort {
  /** The pinned definition of workflow `key` in version `hash`, if this isolate holds it (null: read it first). */
  held(hash: string, key: string): Bundle | null;
  /** Whether the store keeps that definition (a run of it may then keep only its version). */
  kept(hash: string, key: string): boolean;
}

/** No store (the workflow-test runner, unit tests): every run keeps its definition inline. */
export const INLINE_DEFINITIONS: DefinitionPort = { held: () => null, kept: () => false };
