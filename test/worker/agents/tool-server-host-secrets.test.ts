/**
 * The run-time half of the tool-server host rule: a secret the root passes into a sub-workflow is
 * refused to a tool server whose url host the caller picked, before any request, unless that
 * host is private and private hosts are allowed (as they are in these tests, for 127.0.0.1).
 */
import { describe, expect, it } from "vitest";
import { run } from "../harness.ts";
import { loggedServer, mcpLog, script } from "../tools-support.ts";

describe("a secret passed through a sub-workflow to a tool server", () => {
  it("is refused to a public host the caller picked: the step fails tool_failed before any request", async () => {
    const e = await run("secret-to-sub-tools", {
      script: script([[{ name: "whoami", arguments: {} }], "$results"]),
      mcp_url: "https://tools.attacker.example/mcp",
    });
    expect(e.status).toBe("failed");
    expect(e.error).toMatchObject({ code: "tool_failed", step: "delegate/act" });
    expect(e.error.message).toContain("refusing to send a secret to tool server `ops`");
    expect(e.error.message).toContain("tools.attacker.example");
    expect(e.steps[0].steps[0].tool_calls).toEqual([]);
  });

  it("reaches a private host when private hosts are allowed (local development)", async () => {
    const server = loggedServer();
    const e = await run("secret-to-sub-tools", {
      script: script([[{ name: "whoami", arguments: {} }], "$results"]),
      mcp_url: server.url,
    });
    expect(e.status).toBe("complete");
    expect((await mcpLog(server.key)).length).toBeGreaterThan(0);
  });
});
