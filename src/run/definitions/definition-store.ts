/**
 * The definition store (docs/operations.md, "Definitions"): one Durable Object per deployed
 * version and jurisdiction, named by the version's hash, keeping the pinned definition of each of
 * its workflows in one row, written once. It outlives the deploy that wrote it: a run pinned to a
 * version the running code no longer holds reads its definition here (definitions.ts).
 */
import { DurableObject } from "cloudflare:workers";

/** The store's RPC, as its callers see it. */
export interface DefinitionStoreRpc {
  keep(key: string, json: string): Promise<void>;
  get(key: string): Promise<string | null>;
}

const PREFIX = "def/";

export class DefinitionStore extends DurableObject<Env> implements DefinitionStoreRpc {
  /** Keeps the pinned definition of workflow `key` (its JSON); a second keep writes nothing. */
  async keep(key: string, json: string): Promise<void> {
    if (this.ctx.storage.kv.get<string>(PREFIX + key) === undefined)
      this.ctx.storage.kv.put(PREFIX + key, json);
  }

  /** The pinned definition of workflow `key` as kept (null: never kept here). */
  async get(key: string): Promise<string | null> {
    return this.ctx.storage.kv.get<string>(PREFIX + key) ?? null;
  }
}
