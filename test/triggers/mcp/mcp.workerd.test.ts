/**
 * The MCP server (docs/protocols.md, "MCP server") through the official client,
 * `@modelcontextprotocol/client` 2.4.0, pointed at POST /mcp as an agent host would be: tools
 * listed by credential, called as runs (with progress, as tasks), and the stateless 2026-07-28
 * exchange; then what a hand-written request gets wrong.
 */
import { env } from "cloudflare:workers";
import {
  Client,
  ProtocolError,
  StreamableHTTPClientTransport,
  specTypeSchemas,
} from "@modelcontextprotocol/client";
import { describe, expect, it } from "vitest";
import workflowBundle from "workflow-bundle";
import type { Bundle } from "../../../src/bundle.ts";
import { mcpEndpoint } from "../../../src/triggers/mcp/mcp.ts";
import { poll } from "../../support/poll.ts";
import { call, TOKEN, targetLog, uniqueKey } from "../../worker/harness.ts";

const workerFetch = (input: RequestInfo | URL, init?: RequestInit) =>
  call(new URL(input instanceof Request ? input.url : String(input)).pathname, init);

async function connect(token: string | null = TOKEN, mode: "legacy" | "auto" = "legacy") {
  const client = new Client(
    { name: "workflow-edge-tests", version: "1.0.0" },
    { versionNegotiation: { mode } },
  );
  const headers: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};
  const transport = new StreamableHTTPClientTransport(new URL("http://workflow.test/mcp"), {
    fetch: workerFetch,
    requestInit: { headers },
  });
  await client.connect(transport);
  return client;
}

const RUN_ID = "io.workflow-edge/run_id";
const admin = { authorization: `Bearer ${TOKEN}` };

async function envelopeOf(runId: string) {
  // biome-ignore lint/suspicious/noExplicitAny: the envelope is checked field by field
  return (await (await call(`/runs/${runId}`, { headers: admin })).json()) as any;
}

function rpc(body: unknown, headers: Record<string, string> = {}) {
  return call("/mcp", {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      ...admin,
      ...headers,
    },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

describe("the MCP server, through the official client", () => {
  it("initializes without a session and offers tools and tasks", async () => {
    const client = await connect();
    expect(client.getNegotiatedProtocolVersion()).toBe("2025-11-25");
    expect(client.getServerVersion()).toMatchObject({ name: "workflow-edge" });
    expect(client.getServerCapabilities()).toEqual({
      tools: { listChanged: false },
      tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } },
    });
    const res = await rpc({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "x", version: "1" } },
    });
    expect(res.headers.get("mcp-session-id")).toBeNull();
    expect(((await res.json()) as { result: { protocolVersion: string } }).result.protocolVersion).toBe(
      "2025-06-18",
    );
    await client.close();
  });

  it("lists the tools a credential opens: public ones for anyone, protected ones with their token", async () => {
    const withToken = await connect();
    const { tools } = await withToken.listTools();
    const names = tools.map((t) => t.name);
    expect(names).toEqual(
      expect.arrayContaining(["chat-transform", "mcp-approve", "mcp-public", "chat-fail"]),
    );
    expect(names).not.toContain("basic");
    const transform = tools.find((t) => t.name === "chat-transform");
    expect(transform).toMatchObject({
      title: "Ask the transform",
      description: "Answers a question in ten transform steps.",
      inputSchema: { type: "object", required: ["question"] },
      outputSchema: {
        type: "object",
        properties: { result: { type: "object", required: ["answer", "turns"] } },
      },
      execution: { taskSupport: "optional" },
    });
    const anyone = await connect(null);
    const open = (await anyone.listTools()).tools.map((t) => t.name);
    expect(open).toContain("mcp-public");
    expect(open).not.toContain("chat-transform");
    expect(open).not.toContain("mcp-approve");
  });

  it("calls a tool as a run: the output as text and as structured content, the run named in _meta", async () => {
    const client = await connect();
    await client.listTools();
    const result = await client.callTool({ name: "chat-transform", arguments: { question: "from MCP" } });
    expect(result.isError).toBeFalsy();
    const output = { result: { answer: "You asked: from MCP", turns: 0 } };
    expect(result.structuredContent).toEqual(output);
    expect(result.content).toEqual([{ type: "text", text: JSON.stringify(output) }]);
    const runId = (result._meta as Record<string, string>)[RUN_ID] as string;
    const envelope = await envelopeOf(runId);
    expect(envelope).toMatchObject({
      status: "complete",
      workflow: "chat-transform",
      params: { question: "from MCP" },
    });
  });

  it("answers params that fail params.schema as a tool error the calling model can read", async () => {
    const client = await connect();
    const result = await client.callTool({ name: "chat-transform", arguments: { question: 42 } });
    expect(result.isError).toBe(true);
    const text = (result.content as Array<{ text: string }>)[0]?.text ?? "";
    expect(text).toMatch(
      /^invalid_params: the body does not match chat-transform's params.schema; \/question: /,
    );
  });

  it("answers a failed run as a tool error with its code, and runs it once", async () => {
    const client = await connect();
    const key = uniqueKey("mcp-fail");
    const result = await client.callTool({ name: "chat-fail", arguments: { key } });
    expect(result.isError).toBe(true);
    const envelope = await envelopeOf((result._meta as Record<string, string>)[RUN_ID] as string);
    expect(envelope.status).toBe("failed");
    expect((result.content as Array<{ text: string }>)[0]?.text).toBe(
      `${envelope.error.code}: ${envelope.error.message}`,
    );
    expect(await targetLog(key)).toHaveLength(1);
  });

  it("refuses an unknown tool and a tool the credential does not open alike, with -32602", async () => {
    const anyone = await connect(null);
    for (const name of ["no-such-tool", "chat-transform"]) {
      const e = await anyone.callTool({ name, arguments: { question: "x" } }).catch((x) => x);
      expect(e).toBeInstanceOf(ProtocolError);
      expect(e.code).toBe(-32602);
      expect(e.message).toContain(`Unknown tool: ${name}`);
    }
  });

  it("reports each finished step as progress before the result", async () => {
    const client = await connect(null);
    const seen: Array<{ progress: number; total?: number; message?: string }> = [];
    const result = await client.callTool(
      { name: "mcp-public", arguments: { word: "hi" } },
      { onprogress: (p) => seen.push({ progress: p.progress, total: p.total, message: p.message }) },
    );
    expect(result.structuredContent).toEqual({ result: { ok: true, word: "hi" } });
    expect(seen).toEqual([
      { progress: 1, total: 3, message: "one" },
      { progress: 2, total: 3, message: "two" },
      { progress: 3, total: 3, message: "last" },
    ]);
  });

  it("speaks the stateless 2026-07-28 exchange with a client that probes for it", async () => {
    const client = await connect(null, "auto");
    expect(client.getNegotiatedProtocolVersion()).toBe("2026-07-28");
    const tools = (await client.listTools()).tools.map((t) => t.name);
    expect(tools).toContain("mcp-public");
    const result = await client.callTool({ name: "mcp-public", arguments: { word: "stateless" } });
    expect(result.structuredContent).toEqual({ result: { ok: true, word: "stateless" } });
    const res = await rpc({
      jsonrpc: "2.0",
      id: 7,
      method: "server/discover",
      params: {
        _meta: {
          "io.modelcontextprotocol/protocolVersion": "2026-07-28",
          "io.modelcontextprotocol/clientCapabilities": {},
        },
      },
    });
    const body = (await res.json()) as { result: Record<string, unknown> };
    expect(body.result).toMatchObject({
      resultType: "complete",
      supportedVersions: ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"],
      capabilities: { tools: { listChanged: false } },
      cacheScope: "private",
      _meta: { "io.modelcontextprotocol/serverInfo": { name: "workflow-edge" } },
    });
  });
});

describe("a tool call as a task", () => {
  const start = async (client: Client, request: string) =>
    client.request(
      {
        method: "tools/call",
        params: { name: "mcp-approve", arguments: { request }, task: { ttl: 60_000 } },
      },
      specTypeSchemas.CreateTaskResult,
    );
  const get = (client: Client, taskId: string) =>
    client.request({ method: "tasks/get", params: { taskId } }, specTypeSchemas.GetTaskResult);

  it("is working, waits for input, and gives the call's result once the run has it", async () => {
    const client = await connect();
    const { task } = await start(client, "deploy on Friday");
    expect(task).toMatchObject({ status: "working", pollInterval: 1000 });
    expect(typeof task.ttl).toBe("number");
    const waiting = await poll(
      "the task to wait for input",
      () => get(client, task.taskId),
      (t) => t.status === "input_required",
    );
    expect(waiting.statusMessage).toBe("step approval waits for the signal approved");
    const signal = await call(`/runs/${task.taskId}/signals/approved`, {
      method: "POST",
      headers: { ...admin, "content-type": "application/json" },
      body: JSON.stringify({ by: "Ada" }),
    });
    expect(signal.status).toBe(200);
    const result = await client.request(
      { method: "tasks/result", params: { taskId: task.taskId } },
      specTypeSchemas.CallToolResult,
    );
    expect(result.structuredContent).toEqual({ result: { request: "deploy on Friday", approved_by: "Ada" } });
    expect(result._meta).toMatchObject({ "io.modelcontextprotocol/related-task": { taskId: task.taskId } });
    expect((await get(client, task.taskId)).status).toBe("completed");
    const listed = await poll(
      "the task in tasks/list",
      () => client.request({ method: "tasks/list", params: {} }, specTypeSchemas.ListTasksResult),
      (l) => l.tasks.some((t) => t.taskId === task.taskId),
    );
    expect(listed.tasks.find((t) => t.taskId === task.taskId)?.status).toBe("completed");
    const again = await client
      .request({ method: "tasks/cancel", params: { taskId: task.taskId } }, specTypeSchemas.CancelTaskResult)
      .catch((e) => e);
    expect(again).toBeInstanceOf(ProtocolError);
    expect(again.code).toBe(-32602);
    expect(again.message).toContain("already in terminal status 'completed'");
  });

  it("is cancelled with its run", async () => {
    const client = await connect();
    const { task } = await start(client, "never mind");
    const canceled = await client.request(
      { method: "tasks/cancel", params: { taskId: task.taskId } },
      specTypeSchemas.CancelTaskResult,
    );
    expect(canceled.status).toBe("cancelled");
    expect((await envelopeOf(task.taskId)).status).toBe("canceled");
    expect((await get(client, task.taskId)).status).toBe("cancelled");
  });

  it("is unknown to a credential that does not open its tool, and so is a run id that is no task", async () => {
    const client = await connect();
    const { task } = await start(client, "private");
    const anyone = await connect(null);
    for (const taskId of [task.taskId, "f".repeat(64), "not-a-run"]) {
      const e = await get(anyone, taskId).catch((x) => x);
      expect(e).toBeInstanceOf(ProtocolError);
      expect(e.code).toBe(-32602);
    }
    await client.request(
      { method: "tasks/cancel", params: { taskId: task.taskId } },
      specTypeSchemas.CancelTaskResult,
    );
  });
});

describe("POST /mcp for requests no client library would send", () => {
  it("answers GET with 405, naming POST", async () => {
    const res = await call("/mcp");
    expect(res.status).toBe(405);
    expect(res.headers.get("allow")).toContain("POST");
  });

  it("answers with JSON-RPC errors: not JSON, a batch, not a request, an unknown method", async () => {
    const cases: Array<[unknown, number, number]> = [
      ["{not json", 400, -32700],
      [[{ jsonrpc: "2.0", id: 1, method: "ping" }], 400, -32600],
      [{ jsonrpc: "1.0", id: 1, method: "ping" }, 400, -32600],
      [{ jsonrpc: "2.0", id: 1, method: "resources/list" }, 200, -32601],
    ];
    for (const [body, status, code] of cases) {
      const res = await rpc(body);
      expect(res.status, JSON.stringify(body)).toBe(status);
      expect(((await res.json()) as { error: { code: number } }).error.code).toBe(code);
    }
  });

  it("refuses a protocol version it does not speak, and a foreign browser origin", async () => {
    const version = await rpc(
      { jsonrpc: "2.0", id: 1, method: "ping" },
      { "mcp-protocol-version": "2024-01-01" },
    );
    expect(version.status).toBe(400);
    const origin = await rpc({ jsonrpc: "2.0", id: 1, method: "ping" }, { origin: "https://evil.example" });
    expect(origin.status).toBe(403);
    const same = await rpc({ jsonrpc: "2.0", id: 1, method: "ping" }, { origin: "http://workflow.test" });
    expect(same.status).toBe(200);
  });

  it("takes a notification with 202 and nothing else", async () => {
    const res = await rpc({ jsonrpc: "2.0", method: "notifications/initialized" });
    expect(res.status).toBe(202);
    expect(await res.text()).toBe("");
  });

  it("answers 401 with a bearer challenge when no tool opens to the request and none is public", async () => {
    const bundle = workflowBundle as Bundle;
    const key = bundle.invocable["chat-transform"] as string;
    const only = {
      bundle: { ...bundle, invocable: { "chat-transform": key } },
      lookup: (name: string) =>
        name === "chat-transform" ? { key, wf: bundle.workflows[key] as never } : null,
    };
    const req = (auth: Record<string, string>) =>
      new Request("http://workflow.test/mcp", {
        method: "POST",
        headers: { "content-type": "application/json", ...auth },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
      });
    const refused = await mcpEndpoint(only, env as Env, req({ authorization: "Bearer wrong" }));
    expect(refused.status).toBe(401);
    expect(refused.headers.get("www-authenticate")).toMatch(/^Bearer/);
    const opened = await mcpEndpoint(only, env as Env, req(admin));
    expect(
      ((await opened.json()) as { result: { tools: Array<{ name: string }> } }).result.tools.map(
        (t) => t.name,
      ),
    ).toEqual(["chat-transform"]);
  });
});
