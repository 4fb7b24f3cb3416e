/**
 * What a run's steps reach the world with inside the Worker: the real executors, `fetch` capped
 * at the run's outbound limit, MCP tool servers, Workers AI, the system clock, and the URL policy
 * of ALLOW_PRIVATE_WEBHOOKS, and the object's storage as the store's port. (A workflow test gives
 * the lifecycle mocks and a memory store instead: src/testing.)
 */
import { systemClock } from "../engine/clock.ts";
import type { RunHost } from "../engine/run-host.ts";
import { executors } from "../steps/index.ts";
import type { KvPort } from "./kv-port.ts";
import { MAX_OUTBOUND, OutboundLimiter } from "./outbound.ts";
import type { LifecycleRuntime } from "./run-engine.ts";
import { mcpToolHost } from "./tool-host.ts";

/** A Durable Object's SQLite-backed KV as the run store's port (run-store.ts decides what is written). */
export function objectKv(storage: DurableObjectStorage): KvPort {
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

/** The runtime of one run's object (its own outbound limiter). */
export function workerRuntime(env: Env): LifecycleRuntime {
  const allowPrivate = env.ALLOW_PRIVATE_WEBHOOKS === "true";
  const limiter = new OutboundLimiter(MAX_OUTBOUND);
  const outbound = (input: string | Request, init?: RequestInit) =>
    limiter.run(() => fetch(input, init), init?.signal ?? undefined);
  return {
    env: env as unknown as Record<string, unknown>,
    executors,
    fetch: outbound,
    tools: mcpToolHost(outbound, allowPrivate),
    ai: (env as unknown as { AI?: RunHost["ai"] }).AI,
    clock: systemClock,
    outboundLimit: MAX_OUTBOUND,
    allowPrivate,
    notifyFetch: (input, init) => fetch(input, init),
  };
}
