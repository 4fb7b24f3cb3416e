/**
 * Tool names as providers accept them: OpenAI and Anthropic take `^[A-Za-z0-9_-]{1,64}$`, while
 * MCP tool names may hold `.` or `/` or be longer. One such tool on a server used to make every
 * model call of the step fail (400); it is now offered under a name the provider accepts.
 */
import { describe, expect, it } from "vitest";
import { providerToolNames } from "../../src/steps/tool-servers.ts";

describe("providerToolNames", () => {
  it("keeps every name providers accept, as the documented plain names", () => {
    expect(providerToolNames(["echo", "get-sum", "left__shared", "a_b"])).toEqual([
      "echo",
      "get-sum",
      "left__shared",
      "a_b",
    ]);
  });

  it("writes other characters as _ and cuts to 64, never taking a name already offered", () => {
    const long = `x.${"y".repeat(80)}`;
    const names = providerToolNames(["admin.list", "a.b", "a_b", "a/b", long]);
    expect(names[0]).toBe("admin_list");
    expect(names[2]).toBe("a_b");
    expect(new Set(names).size).toBe(5);
    for (const n of names) expect(n).toMatch(/^[A-Za-z0-9_-]{1,64}$/);
  });
});
