/**
 * How an agent step reaches its tool servers (src/mcp-client/tool-host.ts): the server URL is held to
 * the same outbound policy as a webhook step's, with a reason that names what to change.
 */
import { describe, expect, it } from "vitest";
import { McpError } from "../../src/mcp-client/channel.ts";
import { serverUrl } from "../../src/mcp-client/tool-host.ts";

describe("a tool server's URL", () => {
  it("is taken when it is a public http(s) URL", () => {
    expect(serverUrl("https://tools.example.com/mcp", false).href).toBe("https://tools.example.com/mcp");
  });

  it("refuses a private or loopback host unless ALLOW_PRIVATE_WEBHOOKS is set, saying so", () => {
    for (const raw of ["http://127.0.0.1:9000/mcp", "http://10.1.2.3/mcp", "http://localhost/mcp"]) {
      expect(() => serverUrl(raw, false), raw).toThrow(McpError);
      expect(() => serverUrl(raw, false), raw).toThrow(/ALLOW_PRIVATE_WEBHOOKS=true/);
      expect(serverUrl(raw, true).href, raw).toBe(new URL(raw).href);
    }
  });

  it("refuses what is not an http(s) URL", () => {
    expect(() => serverUrl("not a url", true)).toThrow("the server url is not a valid URL");
    expect(() => serverUrl("ftp://tools.example.com/", true)).toThrow(/must be http\(s\)/);
  });
});
