/**
 * The RPC surface of a concurrency key's object (concurrency-keys.ts), apart from the class so
 * the run object and the HTTP face import no other Worker class.
 */

export interface ConcurrencyKeyRpc {
  /** A new run asks for a slot: `start` now, or `queued` behind the runs before it. */
  admit(runId: string, limit: number): Promise<"start" | "queued">;
  /** A run ended (or was canceled while queued): its slot or its place goes to the next run. */
  release(runId: string): Promise<void>;
}

/** The object of one workflow's key (`gateKey` = `<workflow>\n<key>`). */
export function concurrencyKeyStub(env: Env, gateKey: string): ConcurrencyKeyRpc {
  const ns = env.CONCURRENCY_KEYS;
  return ns.get(ns.idFromName(gateKey)) as unknown as ConcurrencyKeyRpc;
}
