/**
 * What the tool and approval tests share: the MCP servers' URLs (server-everything and the logging
 * server of test/servers/mcp-tools.ts), scripts for the `stub-tools` model, the stub's and the MCP
 * server's logs, and polling a run until a condition holds.
 */

import { env } from "cloudflare:workers";
import { poll } from "../support/poll.ts";
import { call, type Envelope, invoke, TOKEN, uniqueKey } from "./harness.ts";

const vars = env as unknown as Record<string, string>;
export const EVERYTHING_URL = vars.MCP_EVERYTHING_URL as string;
export const TOOLS_URL = vars.MCP_TOOLS_URL as string;
export const MODEL_BASE_URL = vars.MODEL_BASE_URL as string;
export const TOOL_TOKEN = vars.TOOL_TOKEN as string;
export const MODEL_API_KEY = vars.MODEL_API_KEY as string;
export const AUTH = { authorization: `Bearer ${TOKEN}` };

export type ScriptStep =
  | Array<{ name: string; arguments?: unknown }>
  | { calls: Array<{ name: string; arguments?: unknown }>; force?: boolean }
  | { reply: unknown }
  | string;

/** The prompt that makes `stub-tools` follow `steps`; `tag` makes the prompt unique to a test. */
export function script(steps: ScriptStep[], tag = uniqueKey("s")): string {
  return `${tag}\nSCRIPT=${JSON.stringify(steps)}`;
}

export interface StubCall {
  path: string;
  body: {
    model: string;
    tools?: Array<Record<string, unknown>>;
    messages: Array<{ role: string; content: unknown; tool_calls?: unknown }>;
  };
}

/** The model requests whose conversation contains `tag` (every test tags its prompt). */
export async function modelCalls(tag: string): Promise<StubCall[]> {
  const res = await fetch(`${MODEL_BASE_URL}/__log?key=${encodeURIComponent(MODEL_API_KEY)}`);
  const all = (await res.json()) as StubCall[];
  return all.filter((c) => JSON.stringify(c.body.messages).includes(tag));
}

export interface McpLogEntry {
  transport: string;
  method: string;
  params: { name?: string; arguments?: unknown } | null;
  headers: Record<string, string>;
}

export async function mcpLog(key: string): Promise<McpLogEntry[]> {
  return (await (await fetch(`${TOOLS_URL}/__log/${key}`)).json()) as McpLogEntry[];
}

export function toolCallsIn(log: McpLogEntry[]): McpLogEntry[] {
  return log.filter((e) => e.method === "tools/call");
}

/** A fresh key and the logging server's Streamable HTTP URL for it. */
export function loggedServer(): { key: string; url: string } {
  const key = uniqueKey("mcp");
  return { key, url: `${TOOLS_URL}/mcp/${key}` };
}

export async function start(
  name: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<string> {
  const res = await invoke(name, body, { headers });
  if (res.status !== 202) throw new Error(`invoke ${name}: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { run_id: string }).run_id;
}

export async function envelope(runId: string, headers: Record<string, string> = {}): Promise<Envelope> {
  return (await call(`/runs/${runId}`, { headers })).json();
}

/** Polls the envelope until `done` holds. */
export function until(
  runId: string,
  done: (e: Envelope) => boolean,
  headers: Record<string, string> = {},
  timeoutMs = 15_000,
): Promise<Envelope> {
  return poll(
    `run ${runId}'s envelope to pass ${done.name || "the check"}`,
    () => envelope(runId, headers),
    done,
    {
      timeoutMs,
      intervalMs: 40,
    },
  );
}

export const finished = (e: Envelope) => !["pending", "running"].includes(e.status);

export async function approvals(runId: string, headers: Record<string, string> = AUTH) {
  const res = await call(`/runs/${runId}/approvals`, { headers });
  return { status: res.status, body: (await res.json()) as { approvals: Array<Record<string, unknown>> } };
}

export async function decide(
  runId: string,
  id: string,
  body: unknown,
  headers: Record<string, string> = AUTH,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await call(`/runs/${runId}/approvals/${id}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}
