/**
 * The RPC surface of a keyed-signal object (signal-keys.ts) as the Worker and the run objects
 * see it, apart from the class so the HTTP face imports no Worker class.
 */
import type { Json, Residency } from "../../bundle.ts";
import { namedStub } from "../jurisdiction.ts";

/** A signal nobody waited for is kept this long. */
export const KEPT_SIGNAL_MS = 24 * 3600 * 1000;

export type KeyedSendResult =
  | { outcome: "delivered"; runs: string[] }
  | { outcome: "kept" }
  | { outcome: "invalid"; errors: Array<{ path: string; message: string }> };

export interface SignalKeyRpc {
  /** A run's wait for this key started: a kept signal (consumed now), or null (registered). */
  register(runId: string): Promise<Json | null>;
  send(body: Json, name: string, key: string): Promise<KeyedSendResult>;
}

/** The object of (workflow, name, key), in the workflow's jurisdiction. */
export function signalKeyStub(
  env: Env,
  residency: Residency | null,
  workflow: string,
  name: string,
  key: string,
): SignalKeyRpc {
  return namedStub(env.SIGNAL_KEYS, residency, `${workflow}\n${name}\n${key}`);
}
