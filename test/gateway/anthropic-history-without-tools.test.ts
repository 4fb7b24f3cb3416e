/**
 * The Anthropic Messages API refuses a request whose history holds `tool_use` / `tool_result`
 * blocks but that defines no tools, and an empty text turn. After a tool loop, a call that offers
 * no tools (the last turn under `max_turns`, a repair call) must still be a request it accepts.
 */
import { describe, expect, it } from "vitest";
import type { CompiledProvider } from "../../src/bundle.ts";
import { anthropicMessages, prepareAnthropic } from "../../src/gateway/anthropic.ts";
import type { ChatMessage, ModelRequest } from "../../src/gateway/provider.ts";

const history: ChatMessage[] = [
  { role: "user", content: "add 2 and 3" },
  {
    role: "assistant",
    content: "",
    toolCalls: [{ id: "toolu_1", name: "get-sum", arguments: { a: 2, b: 3 } }],
  },
  {
    role: "tool",
    results: [{ callId: "toolu_1", name: "get-sum", content: "The sum is 5.", isError: false }],
  },
  { role: "assistant", content: "", toolCalls: [{ id: "toolu_2", name: "delete", arguments: { id: "x" } }] },
  { role: "tool", results: [{ callId: "toolu_2", name: "delete", content: "refused", isError: true }] },
  { role: "user", content: "Give your final answer now." },
];

const provider: CompiledProvider = {
  name: "p",
  type: "anthropic",
  baseUrl: "http://model.test",
  apiKeyEnv: null,
};

async function sent(
  req: ModelRequest,
): Promise<{ tools?: unknown; messages: Array<{ role: string; content: unknown }> }> {
  let body = "";
  await prepareAnthropic("m", req, provider, {})
    .send({
      fetch: async (_url, init) => {
        body = String(init?.body ?? "");
        return Response.json({ content: [{ type: "text", text: "ok" }] });
      },
      signal: new AbortController().signal,
      deadline: Date.now() + 10_000,
      onAttempt: () => {},
    })
    .catch(() => {});
  return JSON.parse(body);
}

function blockTypes(messages: Array<{ content: unknown }>): string[] {
  return messages.flatMap((m) =>
    typeof m.content === "string" ? ["text"] : (m.content as Array<{ type: string }>).map((b) => b.type),
  );
}

describe("an Anthropic request that offers no tools after a tool loop", () => {
  it("holds no tool_use or tool_result block: the calls and results are text", async () => {
    const body = await sent({
      system: null,
      messages: history,
      maxTokens: 100,
      json: true,
      jsonSchema: null,
    });
    expect(body.tools).toBeUndefined();
    expect(blockTypes(body.messages).every((t) => t === "text")).toBe(true);
    const text = JSON.stringify(body.messages);
    expect(text).toContain("get-sum");
    expect(text).toContain('{\\"a\\":2,\\"b\\":3}');
    expect(text).toContain("The sum is 5.");
    expect(text).toContain("[error from tool delete]");
    // Roles still alternate and start with the user.
    expect(body.messages.map((m) => m.role)).toEqual(["user", "assistant", "user", "assistant", "user"]);
  });

  it("keeps the native blocks when tools are offered", async () => {
    const body = await sent({
      system: null,
      messages: history.slice(0, 3),
      maxTokens: 100,
      json: false,
      jsonSchema: null,
      tools: [{ name: "get-sum", description: null, parameters: { type: "object" } }],
    });
    expect(blockTypes(body.messages)).toEqual(["text", "tool_use", "tool_result"]);
  });

  it("never sends an empty text turn (an empty reply under repair)", () => {
    const turns = anthropicMessages([
      { role: "user", content: "hi" },
      { role: "assistant", content: "" },
      { role: "user", content: "Your reply is invalid" },
    ]) as Array<{ content: unknown }>;
    expect(turns[1]?.content).not.toBe("");
  });
});
