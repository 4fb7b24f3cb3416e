/**
 * The MCP tool servers of a workflow test case: a `ToolHost` that answers an agent step's tool
 * calls from the case's mocks, so the real tool loop runs (allowlists, approvals, `max_turns`,
 * the budget per turn, `tool_calls` in the step record) and no request leaves.
 *
 * A call is answered by the mock keyed `<step path>/tools/<tool>` (a fan-out item's index may be
 * left out, as for step mocks), one answer per call for a list, and recorded under that path as
 * `{server, url, headers, name, arguments}` (masked). A call without a mock fails the step with
 * `unmocked_step`. A mock is an MCP `tools/call` result (`content`, `structuredContent`,
 * `isError`) or one of its short forms (`text`, `result`); `error` makes the call fail, `delay_s`
 * makes it wait on the virtual clock (the server's `timeout_s` applies).
 *
 * What a server lists: the tools its allowlist names exactly, the tools the case mocks and the
 * tools the step's scripted model turns call (each plain name on the first server whose allowlist
 * admits it). The tool loop then filters that list with the real allowlists, so a call of a tool
 * that is not allowlisted is refused (`tool_not_permitted`) and never reaches its mock.
 */
import type { CompiledServerRef, Json, JsonObject } from "../bundle.ts";
import type { MockAnswer, MockSpec } from "../compiler/test-files/suite.ts";
import { exactNames, serverFor } from "../engine/allowlist.ts";
import { type Clock, sleep } from "../engine/clock.ts";
import type { OutboundLimiter } from "../engine/outbound.ts";
import type {
  StepError,
  ToolHost,
  ToolInfo,
  ToolResult,
  ToolServerTarget,
  ToolSession,
} from "../engine/types.ts";
import { McpError } from "../mcp-client/channel.ts";
import { toToolResult } from "../mcp-client/client.ts";
import { serverUrl } from "../mcp-client/tool-host.ts";
import { keyMatches } from "./mock-keys.ts";

/** How the case's mocks answer, shared with the step mocks (one counter per path, one log). */
export interface MockAnswers {
  /** The mock key that answers `path` (most specific), or null. */
  keyFor(path: string): string | null;
  spec(key: string): MockSpec;
  /** The next answer of `spec` for `path`; unmocked_step when the list is used up. */
  next(path: string, spec: MockSpec, what: string): MockAnswer;
  record(path: string, request: Json): void;
  unmocked(message: string): StepError;
}

export interface ToolMockSetup {
  /** The agent step's slash path (`ctx.path`). */
  path: string;
  refs: CompiledServerRef[];
  /** The tool names the step's scripted model turns call, as the model calls them. */
  scripted: string[];
  /** Every tool mock of the case: key and tool. */
  toolMocks: Array<{ key: string; tool: string }>;
  allowPrivate: boolean;
  clock: Clock;
  limiter: OutboundLimiter;
  answers: MockAnswers;
}

/** The tools each server of the step lists, by the agent's name for the server. */
export function listedTools(
  setup: Omit<ToolMockSetup, "answers" | "clock" | "limiter">,
): Map<string, string[]> {
  const listed = new Map<string, Set<string>>(setup.refs.map((r) => [r.name, new Set(exactNames(r.allow))]));
  const add = (server: string | undefined, tool: string) => {
    if (server !== undefined) listed.get(server)?.add(tool);
  };
  for (const { key, tool } of setup.toolMocks) {
    const stepKey = key.slice(0, key.length - `/tools/${tool}`.length);
    if (keyMatches(stepKey, setup.path)) add(serverFor(setup.refs, tool)?.name, tool);
  }
  for (const name of setup.scripted) {
    // `<server>__<tool>`: the name the model is offered when two servers share a tool.
    const split = /^(.+?)__(.+)$/.exec(name);
    const named = split ? setup.refs.find((r) => r.name === split[1]) : undefined;
    if (named && split) add(named.name, split[2] as string);
    else add(serverFor(setup.refs, name)?.name, name);
  }
  return new Map([...listed].map(([server, tools]) => [server, [...tools].sort()]));
}

/** The MCP `tools/call` result a mock stands for. */
function callResult(answer: MockAnswer): Json {
  if (answer.text !== undefined) {
    return { content: [{ type: "text", text: answer.text }], isError: answer.isError === true };
  }
  if (answer.result !== undefined) {
    const r = answer.result;
    if (r !== null && typeof r === "object" && !Array.isArray(r))
      return { content: [], structuredContent: r };
    return { content: [{ type: "text", text: typeof r === "string" ? r : JSON.stringify(r) }] };
  }
  const out: JsonObject = { content: answer.content ?? [] };
  if (answer.structuredContent !== undefined) out.structuredContent = answer.structuredContent;
  if (answer.isError !== undefined) out.isError = answer.isError;
  return out;
}

function lowerCased(headers: Record<string, string>): JsonObject {
  return Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
}

export function mockToolHost(setup: ToolMockSetup): ToolHost {
  const listed = listedTools(setup);
  const { answers } = setup;
  return {
    async connect(target: ToolServerTarget): Promise<ToolSession> {
      // As the Worker's host: a URL that is not http(s), or a private host, is refused.
      serverUrl(target.url, setup.allowPrivate);
      return {
        async listTools(): Promise<ToolInfo[]> {
          return (listed.get(target.server) ?? []).map((name) => ({
            name,
            description: null,
            inputSchema: { type: "object" },
          }));
        },
        async callTool(name, args, signal): Promise<ToolResult> {
          const path = `${target.path}/tools/${name}`;
          const key = answers.keyFor(path);
          if (key === null) {
            throw answers.unmocked(
              `tool call \`${path}\` has no mock: add \`${path}:\` under the case's \`mocks\``,
            );
          }
          return setup.limiter.run(async () => {
            answers.record(path, {
              server: target.server,
              url: target.url,
              headers: lowerCased(target.headers),
              name,
              arguments: args,
            });
            const answer = answers.next(path, answers.spec(key), "call");
            const delay = (answer.delay_s ?? 0) * 1000;
            if (delay > 0) await sleep(setup.clock, Math.min(delay, target.timeoutMs), signal);
            if (signal.aborted) throw signal.reason;
            // The MCP client's own words for a call that outlives the server's timeout_s.
            if (delay > target.timeoutMs) {
              throw new McpError(`tools/call: no answer within ${Math.round(target.timeoutMs / 1000)} s`);
            }
            if (answer.error !== undefined) throw new TypeError(`fetch failed: ${answer.error}`);
            return toToolResult(callResult(answer));
          }, signal);
        },
        async close() {},
      };
    },
  };
}
