/**
 * The storage port of the run layer's pure rules (run-store.ts, flow-key-rules.ts): a synchronous
 * key-value store, which a Durable Object gives as its SQLite-backed KV (each put or delete a
 * billed row) and the tests as memory (memory-kv.ts).
 */

/** A synchronous key-value store (a SQLite-backed object's `ctx.storage.kv`, or memory). */
export interface KvPort {
  get(key: string): string | undefined;
  put(key: string, value: string): void;
  delete(key: string): void;
  /** The rows under `prefix`, in key order (byte order), as a snapshot taken now. */
  list(prefix: string): Array<[string, string]>;
}
