/**
 * What a run's steps reach the world with inside the Worker: the real executors, `fetch` capped
 * at the run's outbound limit, MCP tool servers, Workers AI, the system clock, and the URL policy
 * of ALLOW_PRIVATE_WEBHOOKS, and the object's storage as the store's port. (A workflow test gives
 * the lifecycle mocks and a memory store instead: src/testing.)
 */
import { systemClock } from "../../engine/clock.ts";
import { MAX_OUTBOUND, OutboundLimiter } from "../../engine/outbound.ts";
import type { RunHost } from "../../engine/run-host.ts";
import { mcpToolHost } from "../../mcp-client/tool-host.ts";
import { executors } from "../../steps/index.ts";
import type { LifecycleRuntime } from "../lifecycle/run-engine.ts";

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
