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

/** The part of a Durable Object's `ctx.storage.kv` the port uses (typed here so Node code can read this file). */
interface ObjectKv {
  get<T>(key: string): T | undefined;
  put<T>(key: string, value: T): void;
  delete(key: string): boolean;
  list<T>(options: { prefix: string }): Iterable<[string, T]>;
}

/** A Durable Object's SQLite-backed KV as the run store's port (run-store.ts decides what is written). */
export function objectKv(storage: { kv: ObjectKv }): KvPort {
  const kv = storage.kv;
  return {
    get: (key) => kv.get<string>(key),
    put: (key, value) => kv.put(key, value),
    delete: (key) => void kv.delete(key),
    // A snapshot: the object's KV allows one open list iterator at a time, and callers write or
    // list again while they walk the rows.
    list: (prefix) => [...kv.list<string>({ prefix })],
  };
}
