/**
 * A small MCP tool server for the workers tests, beside the official server-everything: it logs
 * every JSON-RPC request it gets (so a test can prove a call was never made) and speaks both
 * transports on one port:
 * - Streamable HTTP at `/mcp/<key>` (JSON answers, `Mcp-Session-Id`, DELETE ends the session);
 * - the older HTTP+SSE transport at `/sse/<key>` (GET the stream; its `endpoint` event names
 *   `/messages/<key>?session=…`, where requests are POSTed and answered on the stream). `POST
 *   /sse/<key>` answers 405, as such servers do, so a client that tries Streamable HTTP first
 *   falls back; `/base/<key>` answers 404 to everything but `GET /base/<key>/sse` (ktsu's base-URL
 *   form).
 * `<key>` scopes the log: `GET /__log/<key>` lists `{transport, method, params, headers}`.
 *
 * Tools: `echo {message}`, `get-sum {a, b}`, `delete-record {id}`, `whoami` (answers the
 * Authorization header it got: a test checks it never reaches the record unmasked),
 * `fail` (an `isError` result), `slow {ms}`. `tools/list` pages two tools at a time, so clients
 * must follow `nextCursor`.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface McpLogEntry {
  transport: "streamable-http" | "sse";
  method: string;
  params: unknown;
  headers: Record<string, string>;
}

const TOOLS = [
  {
    name: "echo",
    description: "Echoes back the input string",
    inputSchema: { type: "object", properties: { message: { type: "string" } }, required: ["message"] },
  },
  {
    name: "get-sum",
    description: "Returns the sum of two numbers",
    inputSchema: {
      $schema: "http://json-schema.org/draft-07/schema#",
      type: "object",
      properties: { a: { type: "number" }, b: { type: "number" } },
      required: ["a", "b"],
    },
  },
  {
    name: "delete-record",
    description: "Deletes a record",
    inputSchema: { type: "object", properties: { id: { type: "string" } }, required: ["id"] },
  },
  { name: "whoami", description: "Tells who the caller authenticated as", inputSchema: { type: "object" } },
  { name: "fail", description: "Always fails", inputSchema: { type: "object" } },
  {
    name: "slow",
    description: "Answers after ms",
    inputSchema: { type: "object", properties: { ms: { type: "number" } } },
  },
];
const PAGE = 2;

type Rpc = { jsonrpc: "2.0"; id?: number | string; method: string; params?: Record<string, unknown> };

async function answer(rpc: Rpc, headers: Record<string, string>): Promise<unknown> {
  const p = rpc.params ?? {};
  switch (rpc.method) {
    case "initialize":
      return {
        protocolVersion: typeof p.protocolVersion === "string" ? p.protocolVersion : "2024-11-05",
        capabilities: { tools: {} },
        serverInfo: { name: "test-tools", version: "1.0.0" },
      };
    case "tools/list": {
      const start = typeof p.cursor === "string" ? Number(p.cursor) : 0;
      const page = TOOLS.slice(start, start + PAGE);
      const next = start + PAGE < TOOLS.length ? String(start + PAGE) : undefined;
      return { tools: page, ...(next ? { nextCursor: next } : {}) };
    }
    case "tools/call": {
      const args = (p.arguments ?? {}) as Record<string, unknown>;
      switch (p.name) {
        case "echo":
          return { content: [{ type: "text", text: `Echo: ${String(args.message)}` }] };
        case "get-sum":
          return {
            content: [
              {
                type: "text",
                text: `The sum of ${args.a} and ${args.b} is ${Number(args.a) + Number(args.b)}.`,
              },
            ],
          };
        case "delete-record":
          return { content: [{ type: "text", text: `deleted ${String(args.id)}` }] };
        case "whoami":
          return {
            content: [{ type: "text", text: `you are ${headers.authorization ?? "nobody"}` }],
            structuredContent: { authorization: headers.authorization ?? null },
          };
        case "fail":
          return { content: [{ type: "text", text: "it broke" }], isError: true };
        case "slow":
          await new Promise((r) => setTimeout(r, Number(args.ms ?? 1000)));
          return { content: [{ type: "text", text: "slow done" }] };
        default:
          return { content: [{ type: "text", text: `unknown tool ${String(p.name)}` }], isError: true };
      }
    }
    default:
      return undefined;
  }
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

function headersOf(req: IncomingMessage): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(req.headers)) if (typeof v === "string") out[k] = v;
  return out;
}

export async function startMcpTools(): Promise<{ port: number; close(): Promise<void> }> {
  const log = new Map<string, McpLogEntry[]>();
  const streams = new Map<string, ServerResponse>();
  let nextSession = 1;
  const record = (key: string, e: McpLogEntry) => {
    const list = log.get(key) ?? [];
    list.push(e);
    log.set(key, list);
  };

  const server = createServer(async (req, res) => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    const parts = url.pathname.split("/").filter(Boolean);
    const [kind, key = "default", tail] = parts;
    const headers = headersOf(req);

    if (kind === "__log") {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify(log.get(key) ?? []));
      return;
    }

    // Streamable HTTP
    if (kind === "mcp" && req.method === "POST") {
      const rpc = JSON.parse(await readBody(req)) as Rpc;
      record(key, { transport: "streamable-http", method: rpc.method, params: rpc.params ?? null, headers });
      if (rpc.id === undefined) {
        res.writeHead(202).end();
        return;
      }
      const result = await answer(rpc, headers);
      const extra: Record<string, string> =
        rpc.method === "initialize" ? { "mcp-session-id": `s-${nextSession++}` } : {};
      res.writeHead(200, { "content-type": "application/json", ...extra });
      res.end(
        JSON.stringify(
          result === undefined
            ? { jsonrpc: "2.0", id: rpc.id, error: { code: -32601, message: "Method not found" } }
            : { jsonrpc: "2.0", id: rpc.id, result },
        ),
      );
      return;
    }
    if (kind === "mcp" && req.method === "DELETE") {
      record(key, { transport: "streamable-http", method: "DELETE", params: null, headers });
      res.writeHead(200).end();
      return;
    }

    // HTTP+SSE: `/sse/<key>` is the stream; `/base/<key>/sse` the same for ktsu's base-URL form.
    const isStream = (kind === "sse" && tail === undefined) || (kind === "base" && tail === "sse");
    if (isStream && req.method === "GET") {
      const session = `l-${nextSession++}`;
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
      res.write(`event: endpoint\ndata: /messages/${key}?session=${session}\n\n`);
      streams.set(session, res);
      req.on("close", () => streams.delete(session));
      return;
    }
    if (kind === "messages" && req.method === "POST") {
      const stream = streams.get(url.searchParams.get("session") ?? "");
      if (!stream) {
        res.writeHead(404).end();
        return;
      }
      const rpc = JSON.parse(await readBody(req)) as Rpc;
      record(key, { transport: "sse", method: rpc.method, params: rpc.params ?? null, headers });
      res.writeHead(202).end("Accepted");
      if (rpc.id === undefined) return;
      const result = await answer(rpc, headers);
      const message =
        result === undefined
          ? { jsonrpc: "2.0", id: rpc.id, error: { code: -32601, message: "Method not found" } }
          : { jsonrpc: "2.0", id: rpc.id, result };
      stream.write(`event: message\ndata: ${JSON.stringify(message)}\n\n`);
      return;
    }
    if (kind === "sse" && req.method === "POST") {
      record(key, { transport: "sse", method: "POST (refused)", params: null, headers });
      res.writeHead(405, { allow: "GET" }).end();
      return;
    }
    res.writeHead(404).end();
  });

  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    port,
    close: () =>
      new Promise<void>((resolve, reject) => {
        for (const s of streams.values()) s.end();
        server.closeAllConnections();
        server.close((e) => (e ? reject(e) : resolve()));
      }),
  };
}
