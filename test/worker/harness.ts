/**
 * Helpers for end-to-end tests: requests go through the real Worker entry (Hono app + Durable
 * Objects in workerd); webhook targets are the real Node server from test/global-setup.ts.
 */
import { env, exports } from "cloudflare:workers";
import { poll } from "../support/poll.ts";

export const TOKEN = (env as unknown as Record<string, string>).INVOKE_TOKEN as string;
export const TARGET = (env as unknown as Record<string, string>).TARGET_URL as string;

export function call(path: string, init: RequestInit = {}): Promise<Response> {
  return (exports as unknown as { default: Fetcher }).default.fetch(
    new Request(`http://workflow.test${path}`, init),
  );
}

export interface InvokeOptions {
  headers?: Record<string, string>;
  wait?: number;
}

export function invoke(name: string, body: unknown = {}, opts: InvokeOptions = {}): Promise<Response> {
  const headers: Record<string, string> = { "content-type": "application/json", ...opts.headers };
  if (opts.wait !== undefined) headers.prefer = `wait=${opts.wait}`;
  return call(`/invoke/${name}`, {
    method: "POST",
    headers,
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

// biome-ignore lint/suspicious/noExplicitAny: envelopes are checked field by field in the tests
export type Envelope = any;

/** Invokes with Prefer: wait and returns the finished envelope (fails the test if not finished). */
export async function run(name: string, body: unknown = {}, opts: InvokeOptions = {}): Promise<Envelope> {
  const res = await invoke(name, body, { wait: 30, ...opts });
  if (res.status !== 200)
    throw new Error(`expected 200 from invoke ${name}, got ${res.status}: ${await res.text()}`);
  return res.json();
}

/** Polls GET /runs/{id} until the run is no longer queued, pending or running. */
export function waitForRun(runId: string, headers: Record<string, string> = {}, timeoutMs = 20_000) {
  return poll(
    `run ${runId} to finish`,
    async () => (await call(`/runs/${runId}`, { headers })).json() as Promise<Envelope>,
    (e) => !["queued", "pending", "running"].includes(e.status),
    { timeoutMs, intervalMs: 50 },
  );
}

export interface LoggedRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: string;
  time: number;
}

/** Every request the webhook target recorded under `key`. */
export async function targetLog(key: string): Promise<LoggedRequest[]> {
  const res = await fetch(`${TARGET}/log?key=${encodeURIComponent(key)}`);
  return (await res.json()) as LoggedRequest[];
}

export function uniqueKey(prefix: string): string {
  return `${prefix}-${crypto.randomUUID()}`;
}
