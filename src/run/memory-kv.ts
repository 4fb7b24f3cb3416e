/**
 * A key-value port in memory: the workflow-test runner's storage, and the Node tests' stand-in
 * for a Durable Object's SQLite-backed KV (run-store.ts says what a run writes to it).
 */
import type { KvPort } from "./kv-port.ts";

/** A KvPort in memory (the workflow-test runner's storage). */
export function memoryKv(): KvPort {
  const rows = new Map<string, string>();
  return {
    get: (key) => rows.get(key),
    put: (key, value) => void rows.set(key, value),
    delete: (key) => void rows.delete(key),
    list: (prefix) =>
      [...rows].filter(([k]) => k.startsWith(prefix)).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
  };
}
