/**
 * docs/agents-and-tools.md where the feature tests leave off: several gated calls in
 * one reply (each its own approval, the turn waits for all, `approval.decided` on the event
 * stream, every call of a failing reply recorded), the default approval timeout (the run's
 * deadline), two servers with the same tool names (`<server>__<tool>`) with a raw auth header,
 * the default `max_turns` (10), and a `ktsu_skip_reason` that is non-empty but blank.
 */

import { describe, expect, it } from "vitest";
import { poll } from "../../support/poll.ts";
import { readUntil } from "../../support/read-stream.ts";
import { call, type Envelope, run, uniqueKey } from "../harness.ts";
import {
  approvals,
  decide,
  finished,
  loggedServer,
  mcpLog,
  modelCalls,
  script,
  start,
  TOOL_TOKEN,
  toolCallsIn,
  until,
} from "../tools-support.ts";

/** Reads the run's event stream until an event of `type` arrives; returns the text so far. */
function readEvent(reader: ReadableStreamDefaultReader<string>, type: string): Promise<string> {
  return readUntil(reader, (text) => text.includes(`event: ${type}`), {
    what: `the event stream, for ${type}`,
  });
}

describe("several gated calls in one reply", () => {
  it("each get an approval; the turn waits for all; a failing reply records every call, none made", async () => {
    const server = loggedServer();
    const runId = await start("gates", {
      script: script([
        [
          { name: "echo", arguments: { message: "a" } },
          { name: "whoami", arguments: {} },
          { name: "delete-record", arguments: { id: "r7" } },
        ],
        "$results",
      ]),
      mcp_url: server.url,
    });
    const waiting = await until(runId, (e: Envelope) => e.steps[0]?.status === "pending_approval");
    const list = await poll(
      `two approvals of ${runId}`,
      () => approvals(runId, {}),
      (l) => l.body.approvals.length >= 2,
    );
    expect(list.body.approvals.map((a) => a.tool).sort()).toEqual(["delete-record", "echo"]);
    const echo = list.body.approvals.find((a) => a.tool === "echo") as Record<string, unknown> & {
      id: string;
    };
    const del = list.body.approvals.find((a) => a.tool === "delete-record") as { id: string };
    // No `timeout` in the policy: it waits until the run's deadline.
    expect(echo.expires_at).toBe(waiting.deadline);

    const events = await call(`/runs/${runId}/events`);
    const reader = (events.body as ReadableStream<Uint8Array>)
      .pipeThrough(new TextDecoderStream())
      .getReader();
    const approved = await decide(runId, echo.id, { decision: "approved", comment: `ok ${TOOL_TOKEN}` }, {});
    expect(approved.status).toBe(200);
    expect(Object.keys(approved.body).sort()).toEqual(
      [
        "arguments",
        "comment",
        "created_at",
        "decided_at",
        "expires_at",
        "id",
        "kind",
        "run_id",
        "server",
        "status",
        "step",
        "tool",
      ].sort(),
    );
    expect(approved.body.comment).toBe("ok ***");
    const text = await readEvent(reader, "approval.decided");
    await reader.cancel();
    const block = text.split("\n\n").find((b) => b.includes("event: approval.decided")) ?? "";
    const data = JSON.parse(block.split("data: ")[1] ?? "{}") as { approval: Record<string, unknown> };
    expect(data.approval).toMatchObject({ id: echo.id, status: "approved", comment: "ok ***" });
    expect(text).not.toContain(TOOL_TOKEN);

    // One of two decided: the step still waits, and nothing was called.
    expect((await until(runId, () => true)).steps[0].status).toBe("pending_approval");
    expect(toolCallsIn(await mcpLog(server.key))).toEqual([]);

    await decide(runId, del.id, { decision: "rejected", comment: "no" }, {});
    const done = await until(runId, finished);
    expect(done.error).toMatchObject({ code: "approval_rejected", step: "act" });
    const calls = done.steps[0].tool_calls as Array<Record<string, unknown>>;
    expect(
      calls.map((c) => [c.name, c.result, (c.approval as { status: string } | null)?.status ?? null]),
    ).toEqual([
      ["echo", null, "approved"],
      ["whoami", null, null],
      ["delete-record", null, "rejected"],
    ]);
    for (const c of calls) expect(typeof c.error).toBe("string");
    expect(done.steps[0].metrics.tool_calls).toBe(3);
    expect(toolCallsIn(await mcpLog(server.key))).toEqual([]);
  });
});

describe("two servers with the same tools", () => {
  it("offers those as <server>__<tool>, records the plain name and the agent's server name, sends a raw custom header", async () => {
    const server = loggedServer();
    const tag = uniqueKey("two");
    const e = await run("two-servers", {
      script: script(
        [
          [
            { name: "second__whoami", arguments: {} },
            { name: "first__echo", arguments: { message: "m" } },
          ],
          "$results",
        ],
        tag,
      ),
      mcp_url: server.url,
    });
    expect(e.status).toBe("complete");
    const offered = ((await modelCalls(tag))[0]?.body.tools ?? [])
      .map((t) => (t.function as { name: string }).name)
      .sort();
    // first allowlists echo and whoami; second allows every tool (`*`).
    expect(offered).toEqual(
      [
        "first__echo",
        "first__whoami",
        "second__echo",
        "second__whoami",
        "get-sum",
        "delete-record",
        "fail",
        "slow",
      ].sort(),
    );
    expect(e.steps[0].tool_calls.map((c: { server: string; name: string }) => [c.server, c.name])).toEqual([
      ["second", "whoami"],
      ["first", "echo"],
    ]);
    const made = toolCallsIn(await mcpLog(server.key));
    const whoami = made.find((c) => c.params?.name === "whoami");
    // auth: {header: X-Api-Key, scheme: raw}: the secret as it is, in that header only.
    expect(whoami?.headers["x-api-key"]).toBe(TOOL_TOKEN);
    expect(whoami?.headers.authorization).toBeUndefined();
    expect(made.find((c) => c.params?.name === "echo")?.headers.authorization).toBe(`Bearer ${TOOL_TOKEN}`);
    expect(JSON.stringify(e)).not.toContain(TOOL_TOKEN);
  });

  it("without max_turns, allows 10 model calls, the last one without tools", async () => {
    const server = loggedServer();
    const tag = uniqueKey("ten");
    const always = Array.from({ length: 12 }, () => [{ name: "first__echo", arguments: { message: "x" } }]);
    const e = await run("two-servers", { script: script(always, tag), mcp_url: server.url });
    expect(e.status).toBe("complete");
    expect(e.steps[0].metrics.llm_calls).toBe(10);
    expect(e.steps[0].metrics.tool_calls).toBe(9);
    const calls = await modelCalls(tag);
    expect(calls.map((c) => (c.body.tools ?? []).length)).toEqual([8, 8, 8, 8, 8, 8, 8, 8, 8, 0]);
  });
});

describe("ktsu_skip_reason", () => {
  it("skips the step when it is non-empty, even if it is only spaces (as ktsu does)", async () => {
    const e = await run("tools-contract", {
      script: script([{ reply: { answer: "x", ktsu_confidence: 1, ktsu_skip_reason: " " } }]),
    });
    expect(e.status).toBe("complete");
    expect(e.steps[0]).toMatchObject({ status: "skipped", output: { skipped: true, reason: " " } });
  });

  it("does not skip when it is empty", async () => {
    const e = await run("tools-contract", {
      script: script([{ reply: { answer: "x", ktsu_confidence: 1, ktsu_skip_reason: "" } }]),
    });
    expect(e.steps[0]).toMatchObject({ status: "complete", output: { answer: "x" } });
  });
});

describe("the budget", () => {
  it("holds per turn: a turn that does not fit fails budget_exceeded, keeping the calls made so far", async () => {
    const server = loggedServer();
    const e = await run("gated-budget", {
      script: script([[{ name: "echo", arguments: { message: "a" } }], "$results"]),
      mcp_url: server.url,
    });
    expect(e.error).toMatchObject({ code: "budget_exceeded", step: "act" });
    expect(e.steps[0].metrics).toMatchObject({ llm_calls: 1, tool_calls: 1 });
    expect(e.steps[0].tool_calls).toEqual([expect.objectContaining({ name: "echo", result: "Echo: a" })]);
    expect(e.totals.cost_usd).toBeLessThanOrEqual(e.budget_usd);
  });
});
