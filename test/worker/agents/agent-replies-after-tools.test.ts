/**
 * the tool loop against what real providers accept (docs/agents-and-tools.md): with an Anthropic model the
 * calls that offer no tools after tools were used — the last turn under `max_turns`, a repair call —
 * must still be requests the Messages API takes (the model stub refuses what it refuses).
 */
import { describe, expect, it } from "vitest";
import { run, uniqueKey } from "../harness.ts";
import { loggedServer, mcpLog, modelCalls, script, toolCallsIn } from "../tools-support.ts";

const echo = [{ name: "echo", arguments: { message: "again" } }];

describe("an Anthropic agent after tool calls", () => {
  it("at its last turn (max_turns) is asked without tools and its answer completes the step", async () => {
    const { key, url } = loggedServer();
    const tag = uniqueKey("an-last");
    const e = await run("tools-plain-anthropic", {
      script: script([echo, echo, echo, { reply: { results: ["final"] } }], tag),
      mcp_url: url,
    });
    expect(e.error).toBeNull();
    expect(e.status).toBe("complete");
    expect(e.output).toEqual({ results: ["final"] });
    expect(e.steps[0].metrics.llm_calls).toBe(4);
    const calls = await modelCalls(tag);
    expect(calls.map((c) => Boolean(c.body.tools?.length))).toEqual([true, true, true, false]);
    // The last request still shows the model what its tools answered.
    expect(JSON.stringify(calls[3]?.body.messages)).toContain("Echo: again");
    expect(toolCallsIn(await mcpLog(key))).toHaveLength(3);
  });

  it("gets its one repair call after an invalid final answer", async () => {
    const { url } = loggedServer();
    const tag = uniqueKey("an-repair");
    const e = await run("tools-plain-anthropic", {
      script: script([echo, "this is not JSON", { reply: { results: ["repaired"] } }], tag),
      mcp_url: url,
    });
    expect(e.error).toBeNull();
    expect(e.output).toEqual({ results: ["repaired"] });
    expect(e.steps[0].metrics.llm_calls).toBe(3);
  });
});

describe("an empty reply", () => {
  it("of an agent without tools gets the one repair call (docs/agents-and-tools.md), not max_turns_exceeded", async () => {
    const tag = uniqueKey("empty");
    const e = await run("tools-contract-plain", {
      script: script(["", { reply: { answer: "fixed", ktsu_confidence: 0.9 } }], tag),
    });
    expect(e.error).toBeNull();
    expect(e.steps[0].output).toEqual({ answer: "fixed" });
    expect(e.steps[0].metrics.llm_calls).toBe(2);
  });

  it("of an agent without tools fails output_schema_mismatch when the repair is empty too", async () => {
    const e = await run("tools-contract-plain", { script: script(["", ""], uniqueKey("empty2")) });
    expect(e.error?.code).toBe("output_schema_mismatch");
    expect(e.steps[0].metrics.llm_calls).toBe(2);
  });

  it("in the middle of a tool loop is an invalid final answer: one repair call", async () => {
    const { url } = loggedServer();
    const e = await run("tools-plain", {
      script: script([echo, "", { reply: { results: ["after repair"] } }], uniqueKey("empty3")),
      mcp_url: url,
    });
    expect(e.error).toBeNull();
    expect(e.output).toEqual({ results: ["after repair"] });
  });

  it("at the last turn of a tool loop fails max_turns_exceeded", async () => {
    const { url } = loggedServer();
    const e = await run("tools-plain", {
      script: script([echo, echo, echo, ""], uniqueKey("empty4")),
      mcp_url: url,
    });
    expect(e.error?.code).toBe("max_turns_exceeded");
  });
});
