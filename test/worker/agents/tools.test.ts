/**
 * Agents with tools, end to end (docs/agents-and-tools.md): the Worker and its run object in workerd, the official
 * MCP server-everything (Streamable HTTP) and our logging MCP server (both transports) on
 * 127.0.0.1, and the model stub's scripted `stub-tools` model speaking OpenAI and Anthropic.
 */
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { runStub } from "../../reliability/run-helpers.ts";
import { run, uniqueKey } from "../harness.ts";
import {
  AUTH,
  EVERYTHING_URL,
  loggedServer,
  mcpLog,
  modelCalls,
  script,
  TOOL_TOKEN,
  TOOLS_URL,
  toolCallsIn,
} from "../tools-support.ts";

const SUM_AND_ECHO = [
  [
    { name: "get-sum", arguments: { a: 2, b: 3 } },
    { name: "echo", arguments: { message: "hi" } },
  ],
  "$results",
];

describe("the tool loop against server-everything (Streamable HTTP)", () => {
  it("offers only the allowlisted tools, makes the calls, and feeds the results back natively (OpenAI)", async () => {
    const tag = uniqueKey("oa");
    const e = await run("tools-plain", { script: script(SUM_AND_ECHO, tag), mcp_url: EVERYTHING_URL });
    expect(e.status).toBe("complete");
    expect(e.output).toEqual({ results: ["The sum of 2 and 3 is 5.", "Echo: hi"] });

    const step = e.steps[0];
    expect(step.tool_calls).toHaveLength(2);
    expect(step.tool_calls[0]).toMatchObject({
      server: "everything",
      name: "get-sum",
      arguments: { a: 2, b: 3 },
      result: "The sum of 2 and 3 is 5.",
      error: null,
      approval: null,
    });
    expect(Date.parse(step.tool_calls[0].finished_at)).toBeGreaterThanOrEqual(
      Date.parse(step.tool_calls[0].started_at),
    );
    expect(step.metrics.tool_calls).toBe(2);
    expect(step.metrics.llm_calls).toBe(2);
    expect(step.annotations).toBeNull();
    // The run's totals count the tool calls of all its steps.
    expect(e.totals.tool_calls).toBe(2);

    const calls = await modelCalls(tag);
    expect(calls).toHaveLength(2);
    // server-everything has a dozen tools; the agent allowlists two.
    const offered = (calls[0]?.body.tools ?? []).map((t) => (t.function as { name: string }).name).sort();
    expect(offered).toEqual(["echo", "get-sum"]);
    const second = calls[1]?.body.messages ?? [];
    expect(second.filter((m) => m.role === "tool").map((m) => m.content)).toEqual([
      "The sum of 2 and 3 is 5.",
      "Echo: hi",
    ]);
    const assistant = second.find((m) => m.role === "assistant");
    expect(assistant?.tool_calls).toHaveLength(2);
  });

  it("speaks Anthropic's tool_use and tool_result blocks", async () => {
    const tag = uniqueKey("an");
    const e = await run("tools-plain-anthropic", {
      script: script(SUM_AND_ECHO, tag),
      mcp_url: EVERYTHING_URL,
    });
    expect(e.status).toBe("complete");
    expect(e.output).toEqual({ results: ["The sum of 2 and 3 is 5.", "Echo: hi"] });
    const calls = await modelCalls(tag);
    expect(calls[0]?.path).toBe("/v1/messages");
    expect((calls[0]?.body.tools ?? []).map((t) => t.name).sort()).toEqual(["echo", "get-sum"]);
    expect(calls[0]?.body.tools?.[0]).toHaveProperty("input_schema");
    const results = calls[1]?.body.messages.at(-1);
    expect(results?.role).toBe("user");
    expect(((results?.content ?? []) as Array<{ type: string }>).map((b) => b.type)).toEqual([
      "tool_result",
      "tool_result",
    ]);
  });
});

describe("allowlists", () => {
  it("never makes a call to a tool that is not allowlisted: the step fails tool_not_permitted", async () => {
    const { key, url } = loggedServer();
    const tag = uniqueKey("deny");
    const e = await run("tools-plain", {
      script: script([[{ name: "whoami" }], "$results"], tag),
      mcp_url: url,
    });
    expect(e.status).toBe("failed");
    expect(e.error).toMatchObject({ code: "tool_not_permitted", step: "agent" });
    expect(e.steps[0].error.message).toContain("whoami");
    const log = await mcpLog(key);
    expect(toolCallsIn(log)).toEqual([]);
    // The logging server pages its tools two at a time: the whole list was read, two were offered.
    expect(log.filter((l) => l.method === "tools/list").length).toBeGreaterThan(1);
    const offered = ((await modelCalls(tag))[0]?.body.tools ?? []).map(
      (t) => (t.function as { name: string }).name,
    );
    expect(offered.sort()).toEqual(["echo", "get-sum"]);
  });

  it("offers prefix patterns' tools (get-*) and leaves the others out", async () => {
    const { url } = loggedServer();
    const tag = uniqueKey("prefix");
    const e = await run(
      "tools-logged",
      { script: script([[{ name: "get-sum", arguments: { a: 1, b: 1 } }], "$results"], tag), mcp_url: url },
      { headers: AUTH },
    );
    expect(e.error).toBeNull();
    expect(e.status).toBe("complete");
    const offered = ((await modelCalls(tag))[0]?.body.tools ?? []).map(
      (t) => (t.function as { name: string }).name,
    );
    expect(offered.sort()).toEqual(["delete-record", "echo", "fail", "get-sum", "slow", "whoami"]);
  });
});

describe("max_turns", () => {
  it("offers no tools at the last model call and takes its answer", async () => {
    const { key, url } = loggedServer();
    const tag = uniqueKey("last");
    const echo = [{ name: "echo", arguments: { message: "again" } }];
    const e = await run("tools-plain", { script: script([echo, echo, echo, echo], tag), mcp_url: url });
    expect(e.status).toBe("complete");
    expect(e.output.results).toHaveLength(3);
    expect(e.steps[0].metrics.llm_calls).toBe(4);
    const calls = await modelCalls(tag);
    expect(calls.map((c) => Boolean(c.body.tools?.length))).toEqual([true, true, true, false]);
    expect(JSON.stringify(calls[3]?.body.messages.at(-1))).toContain("final answer");
    expect(toolCallsIn(await mcpLog(key))).toHaveLength(3);
  });

  it("fails max_turns_exceeded when the last call still gives no answer", async () => {
    const { key, url } = loggedServer();
    const echo = [{ name: "echo", arguments: { message: "again" } }];
    const e = await run("tools-plain", {
      script: script([echo, echo, echo, { calls: echo, force: true }]),
      mcp_url: url,
    });
    expect(e.status).toBe("failed");
    expect(e.error.code).toBe("max_turns_exceeded");
    expect(e.steps[0].metrics.llm_calls).toBe(4);
    expect(toolCallsIn(await mcpLog(key))).toHaveLength(3);
  });
});

describe("transports", () => {
  it("falls back to HTTP+SSE when the initialize POST answers 405", async () => {
    const key = uniqueKey("sse");
    const e = await run("tools-plain", {
      script: script([[{ name: "get-sum", arguments: { a: 4, b: 5 } }], "$results"]),
      mcp_url: `${TOOLS_URL}/sse/${key}`,
    });
    expect(e.status).toBe("complete");
    expect(e.output).toEqual({ results: ["The sum of 4 and 5 is 9."] });
    const log = await mcpLog(key);
    expect(log[0]?.method).toBe("POST (refused)");
    expect(log.slice(1).map((l) => `${l.transport} ${l.method}`)).toEqual([
      "sse initialize",
      "sse notifications/initialized",
      "sse tools/list",
      "sse tools/list",
      "sse tools/list",
      "sse tools/call",
    ]);
  });

  it("reaches a ktsu server file's base URL through <url>/sse", async () => {
    const key = uniqueKey("base");
    const e = await run("tools-plain", {
      script: script([[{ name: "echo", arguments: { message: "base" } }], "$results"]),
      mcp_url: `${TOOLS_URL}/base/${key}`,
    });
    expect(e.status).toBe("complete");
    expect(e.output).toEqual({ results: ["Echo: base"] });
  });

  it("ends the Streamable HTTP session with DELETE", async () => {
    const { key, url } = loggedServer();
    await run("tools-plain", {
      script: script([[{ name: "echo", arguments: { message: "x" } }], "$results"]),
      mcp_url: url,
    });
    const log = await mcpLog(key);
    // The stateless revision is asked for first; this server speaks 2025-06-18 and answers it no.
    expect(log.slice(0, 2).map((l) => l.method)).toEqual(["server/discover", "initialize"]);
    expect(log.at(-1)?.method).toBe("DELETE");
  });

  it("fails tool_failed when the server cannot be reached", async () => {
    const e = await run("tools-plain", {
      script: script([[{ name: "echo" }]]),
      mcp_url: `${TOOLS_URL}/nothing-here`,
    });
    expect(e.status).toBe("failed");
    expect(e.error.code).toBe("tool_failed");
  });
});

describe("tool results and secrets", () => {
  it("sends the server's secret only to the server: the record, the conversation and storage never hold it", async () => {
    const { key, url } = loggedServer();
    const tag = uniqueKey("secret");
    const e = await run(
      "tools-logged",
      { script: script([[{ name: "whoami" }], "$results"], tag), mcp_url: url },
      { headers: AUTH },
    );
    expect(e.status).toBe("complete");
    // The server got the token ...
    const log = await mcpLog(key);
    expect(log.every((l) => l.headers.authorization === `Bearer ${TOOL_TOKEN}`)).toBe(true);
    // ... and it echoed it back: recorded masked.
    expect(e.steps[0].tool_calls[0].result).toEqual({ authorization: "Bearer ***" });
    expect(JSON.stringify(e)).not.toContain(TOOL_TOKEN);
    const stored = await runInDurableObject(runStub(e.run_id), (_o, state) =>
      JSON.stringify([...state.storage.kv.list()]),
    );
    expect(stored).not.toContain(TOOL_TOKEN);
    // The prompt never carries it: the agent's secret param is for its server only.
    expect(JSON.stringify((await modelCalls(tag))[0])).not.toContain(TOOL_TOKEN);
  });

  it("feeds an isError result back as an error and records it", async () => {
    const { url } = loggedServer();
    const e = await run(
      "tools-logged",
      { script: script([[{ name: "fail" }], "$results"]), mcp_url: url },
      { headers: AUTH },
    );
    expect(e.status).toBe("complete");
    expect(e.steps[0].output.results).toEqual(["ERROR: it broke"]);
    expect(e.steps[0].tool_calls[0]).toMatchObject({ name: "fail", result: null, error: "it broke" });
  });

  it("gives a call that outlives the server's timeout_s back to the model as an error", async () => {
    const { url } = loggedServer();
    const e = await run(
      "tools-logged",
      { script: script([[{ name: "slow", arguments: { ms: 8000 } }], "$results"]), mcp_url: url },
      { headers: AUTH },
    );
    expect(e.status).toBe("complete");
    expect(e.steps[0].output.results[0]).toMatch(
      /^ERROR: The tool call failed: tools\/call: no answer within 5 s/,
    );
  }, 20_000);
});
