/**
 * What the reliability tests share on top of test/worker/harness.ts: a run's Durable Object
 * stub (to evict it or run its alarm), starting a run without waiting, and waiting for the
 * webhook target to have seen a request.
 */

import { env } from "cloudflare:workers";
import { expect } from "vitest";
import { poll } from "../support/poll.ts";
import { invoke, type LoggedRequest, targetLog } from "../worker/harness.ts";

export function runStub(runId: string): DurableObjectStub {
  return env.RUNS.get(env.RUNS.idFromString(runId));
}

/** Invokes without waiting and returns the run id of the accepted run. */
export async function startRun(name: string, body: unknown): Promise<string> {
  const res = await invoke(name, body);
  expect(res.status).toBe(202);
  return ((await res.json()) as { run_id: string }).run_id;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Polls the target's log for `key` until `done` holds (fails the test after `timeoutMs`). */
export function logUntil(
  key: string,
  done: (log: LoggedRequest[]) => boolean,
  timeoutMs = 10_000,
): Promise<LoggedRequest[]> {
  return poll(`the target's log of ${key}`, () => targetLog(key), done, { timeoutMs, intervalMs: 20 });
}

/** The requests of one step, told apart by the Idempotency-Key the runtime sends. */
export function requestsOf(log: LoggedRequest[], runId: string, stepPath: string): LoggedRequest[] {
  return log.filter((r) => r.headers["idempotency-key"] === `${runId}:${stepPath}`);
}
