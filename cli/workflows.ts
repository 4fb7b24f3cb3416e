/**
 * `workflow-edge workflows` (docs/cli.md): every workflow the deployment serves (`GET /`), with how
 * it is called: its invoke URL, and the base URL and name each protocol that serves it answers at
 * (docs/protocols.md: a chat client's base URL and model, the MCP server's URL and tool; docs/a2a.md:
 * an A2A agent's card), absolute,
 * ready to paste into a client's settings.
 */
import { type Connection, request } from "./api.ts";
import { table } from "./render.ts";
import type { Out } from "./usage.ts";

interface Listed {
  name: string;
  auth: string;
  protocols?: {
    chat: { base_url: string; model: string } | null;
    mcp: { url: string; tool: string } | null;
    a2a?: { url: string; agent_card: string } | null;
  };
}

export async function workflows(conn: Connection, out: Out, json: boolean): Promise<number> {
  const body = (await request(conn, "GET", "/", { headers: { accept: "application/json" } })).body as {
    workflows: Listed[];
  };
  const at = (path: string) => new URL(path, conn.url).href;
  const rows = body.workflows.map((w) => {
    const ways = [`invoke ${at(`/invoke/${encodeURIComponent(w.name)}`)}`];
    const chat = w.protocols?.chat;
    const mcp = w.protocols?.mcp;
    if (chat) ways.push(`chat base URL ${at(chat.base_url)} model ${chat.model}`);
    if (mcp) ways.push(`MCP ${at(mcp.url)} tool ${mcp.tool}`);
    const a2a = w.protocols?.a2a;
    if (a2a) ways.push(`A2A agent card ${at(a2a.agent_card)}`);
    return { name: w.name, auth: w.auth, ways };
  });
  if (json) {
    out.print(JSON.stringify({ workflows: rows }, null, 2));
    return 0;
  }
  out.print(
    table([
      ["WORKFLOW", "AUTH", "CALLED BY"],
      ...rows.flatMap((r) => r.ways.map((way, i) => (i === 0 ? [r.name, r.auth, way] : ["", "", way]))),
    ]),
  );
  return 0;
}
