/**
 * approvals (docs/agents-and-tools.md): a gated call that ends the step (rejected under `on_reject: fail`,
 * timed out under `timeout_behavior: fail`) still appears in the step's `tool_calls` with its
 * approval, and ktsu's decide route never answers a 5xx for a step path it cannot decode.
 */
import { evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { runStub } from "../../reliability/run-helpers.ts";
import { call, type Envelope, uniqueKey } from "../harness.ts";
import {
  AUTH,
  approvals,
  decide,
  finished,
  loggedServer,
  mcpLog,
  script,
  start,
  toolCallsIn,
  until,
} from "../tools-support.ts";

const DELETE = [[{ name: "delete-record", arguments: { id: "r9" } }], "$results"];

async function gated() {
  const server = loggedServer();
  const runId = await start(
    "tools-logged",
    { script: script(DELETE, uniqueKey("gate")), mcp_url: server.url },
    AUTH,
  );
  await until(runId, (e: Envelope) => e.steps[0]?.status === "pending_approval", AUTH);
  const approval = (await approvals(runId)).body.approvals[0] as { id: string };
  return { runId, server, approval };
}

describe("a gated call that ends the step", () => {
  it("rejected under on_reject: fail, is recorded in tool_calls with its approval (and never made)", async () => {
    const { runId, server, approval } = await gated();
    await decide(runId, approval.id, { decision: "rejected", comment: "not today" });
    const done = await until(runId, finished, AUTH);
    expect(done.error.code).toBe("approval_rejected");
    expect(done.steps[0].tool_calls).toEqual([
      expect.objectContaining({
        server: "ops",
        name: "delete-record",
        arguments: { id: "r9" },
        result: null,
        error: expect.stringContaining("not today"),
        approval: { id: approval.id, status: "rejected", comment: "not today" },
      }),
    ]);
    expect(done.steps[0].metrics.tool_calls).toBe(1);
    expect(toolCallsIn(await mcpLog(server.key))).toEqual([]);
  });

  it("timed out under timeout_behavior: fail, is recorded with its approval", async () => {
    const { runId, approval } = await gated();
    await runInDurableObject(runStub(runId), (_o, state) => {
      const key = `approval/${approval.id}`;
      const rec = JSON.parse(state.storage.kv.get<string>(key) ?? "{}") as Record<string, unknown>;
      rec.expires_at = new Date(Date.now() - 1000).toISOString();
      state.storage.kv.put(key, JSON.stringify(rec));
    });
    await evictDurableObject(runStub(runId));
    await runDurableObjectAlarm(runStub(runId));
    const done = await until(runId, finished, AUTH);
    expect(done.error.code).toBe("approval_timeout");
    expect(done.steps[0].tool_calls).toEqual([
      expect.objectContaining({
        name: "delete-record",
        result: null,
        approval: { id: approval.id, status: "timeout", comment: null },
      }),
    ]);
  });
});

describe("ktsu's decide route", () => {
  it("answers 404 approval_not_found, never a 5xx, for a step path that is not valid percent-encoding", async () => {
    const { runId, approval } = await gated();
    for (const step of ["%E0%A4%A", "%", "act%ZZ"]) {
      const res = await call(`/runs/${runId}/steps/${step}/approval/decide`, {
        method: "POST",
        headers: { "content-type": "application/json", ...AUTH },
        body: JSON.stringify({ decision: "approved" }),
      });
      expect(res.status).toBe(404);
      expect(res.headers.get("content-type")).toContain("application/problem+json");
      expect(((await res.json()) as { code: string }).code).toBe("approval_not_found");
    }
    await decide(runId, approval.id, { decision: "rejected" });
    await until(runId, finished, AUTH);
  });
});
