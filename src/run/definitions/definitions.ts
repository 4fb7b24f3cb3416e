/**
 * Where a run's pinned definition comes from (docs/operations.md, "Definitions"). A run keeps
 * its definition's version (the deployed bundle's hash) and workflow key; the definition itself
 * is the running code's own, or, for a version the code no longer holds (a run in flight across a
 * deploy, a re-run on its pinned definition, the viewer of an old run), read from the definition
 * store, which keeps each version's definitions once per jurisdiction and outlives deploys. The
 * store is written the first time an isolate starts a run of a version; until it has answered,
 * runs keep their definition inline, so no run ever depends on a write that may not have landed.
 * The run store (run-store.ts) asks this port; the lifecycle never knows where a definition came from.
 */
import type { Bundle, Residency } from "../../bundle.ts";
import { namedStub } from "../jurisdiction.ts";
import { pinDefinition } from "../run-doc.ts";
import type { DefinitionPort } from "./definition-port.ts";
import type { DefinitionStoreRpc } from "./definition-store.ts";

/** A definition a run needs and this isolate does not hold: `definitionOf` reads it. */
export interface DefinitionRef {
  hash: string;
  key: string;
  residency: Residency | null;
}

/** The definition a run names is in neither the code nor the store (never expected: fails the read). */
export class DefinitionMissing extends Error {
  readonly code = "definition_missing";
  constructor(ref: DefinitionRef) {
    super(`the definition of workflow ${ref.key} in version ${ref.hash.slice(0, 12)} is not kept`);
  }
}

const idOf = (hash: string, key: string) => `${hash}\n${key}`;

/** One isolate's definitions: the code's own version, those read from the store, and what the store keeps. */
export class Definitions {
  private readonly code: Bundle;
  /** Pinned definitions by version and key: the code's, pinned on first use, and those read. */
  private readonly pinned = new Map<string, Bundle>();
  /** Versions and keys the store has answered for, per jurisdiction. */
  private readonly kept = new Set<string>();
  /** Keeps under way (one per version, key and jurisdiction at a time). */
  private readonly keeping = new Map<string, Promise<void>>();
  constructor(code: Bundle) {
    this.code = code;
  }

  /** The pinned definition of `key` in the code's own version (computed once per key). */
  ofCode(key: string): Bundle {
    const id = idOf(this.code.hash, key);
    let def = this.pinned.get(id);
    if (!def) {
      def = pinDefinition(this.code, key);
      this.pinned.set(id, def);
    }
    return def;
  }

  /** The pinned definition of `key` in version `hash`: the code's own, or one read before (null: neither). */
  held(hash: string, key: string): Bundle | null {
    if (hash === this.code.hash && this.code.workflows[key]) return this.ofCode(key);
    return this.pinned.get(idOf(hash, key)) ?? null;
  }

  /** Whether the store of `residency` keeps that definition (a run of it may keep only its version). */
  keptIn(residency: Residency | null, hash: string, key: string): boolean {
    return this.kept.has(`${residency ?? ""}\n${idOf(hash, key)}`);
  }

  /** The port of one run's store: runs of `residency`. */
  portFor(residency: () => Residency | null): DefinitionPort {
    return {
      held: (hash, key) => this.held(hash, key),
      kept: (hash, key) => this.keptIn(residency(), hash, key),
    };
  }

  /**
   * A run of `def` (workflow `key`) lives in `residency`: the store there is asked to keep `def`
   * if it has not answered for it yet, in the background (until it has, runs keep their
   * definition inline). A Worker without the store's binding (a configuration from before it)
   * keeps every definition inline.
   */
  keep(env: Env, residency: Residency | null, def: Bundle, key: string): void {
    if (!env.DEFINITIONS) return;
    const at = `${residency ?? ""}\n${idOf(def.hash, key)}`;
    if (this.kept.has(at) || this.keeping.has(at)) return;
    const keep = storeOf(env, residency, def.hash)
      .keep(key, JSON.stringify(def))
      .then(() => {
        this.kept.add(at);
      })
      // Not kept this time: the next run of this version asks again.
      .catch(() => {})
      .finally(() => this.keeping.delete(at));
    this.keeping.set(at, keep);
  }

  /** Reads a definition the code does not hold from the store of its jurisdiction (then it is held). */
  async definitionOf(env: Env, ref: DefinitionRef): Promise<Bundle> {
    const held = this.held(ref.hash, ref.key);
    if (held) return held;
    if (!env.DEFINITIONS) throw new DefinitionMissing(ref);
    const json = await storeOf(env, ref.residency, ref.hash).get(ref.key);
    if (json === null) throw new DefinitionMissing(ref);
    const def = JSON.parse(json) as Bundle;
    this.pinned.set(idOf(ref.hash, ref.key), def);
    this.kept.add(`${ref.residency ?? ""}\n${idOf(ref.hash, ref.key)}`);
    return def;
  }
}

function storeOf(env: Env, residency: Residency | null, hash: string): DefinitionStoreRpc {
  return namedStub(env.DEFINITIONS, residency, hash);
}
