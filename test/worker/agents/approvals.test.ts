/**
 * Human approval of gated tool calls (docs/agents-and-tools.md): the step waits in `pending_approval`, the approval
 * is listed and decided over HTTP (both endpoint forms), the notification arrives signed with an
 * absolute decide_url, SSE announces it, and approve / reject (fail, recover) / timeout (driven by
 * the run object's alarm) / eviction while pending all end the way the policy says.
 */

import { evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { logUntil, runStub } from "../../reliability/run-helpers.ts";
import { poll } from "../../support/poll.ts";
import { readUntil } from "../../support/read-stream.ts";
import { call, type Envelope, TARGET, uniqueKey } from "../harness.ts";
import {
  AUTH,
  approvals,
  decide,
  envelope,
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

const DELETE = [[{ name: "delete-record", arguments: { id: "r1" } }], "$results"];
const waiting = (e: Envelope) => e.steps[0]?.status === "pending_approval";

/** Starts a gated run and waits until its step waits for a human; returns the run and its approval. */
async function gated(workflow: "tools-logged" | "tools-recover", extra: Record<string, unknown> = {}) {
  const server = loggedServer();
  const tag = uniqueKey("gate");
  const headers = workflow === "tools-logged" ? AUTH : {};
  const runId = await start(
    workflow,
    { script: script(DELETE, tag), mcp_url: server.url, ...extra },
    headers,
  );
  const e = await until(runId, waiting, headers);
  const list = await approvals(runId, headers);
  const approval = list.body.approvals[0] as Record<string, unknown> & { id: string };
  return { runId, server, tag, headers, e, approval };
}

describe("a gated call", () => {
  it("waits in pending_approval with a stored approval; the call is not made until approved", async () => {
    const { runId, server, e, approval } = await gated("tools-logged");
    expect(e.status).toBe("running");
    expect(approval).toMatchObject({
      run_id: runId,
      step: "act",
      kind: "tool",
      server: "ops",
      tool: "delete-record",
      arguments: { id: "r1" },
      status: "pending",
      comment: null,
      decided_at: null,
    });
    expect(approval.id).toMatch(/^apr_[0-9a-f]{32}$/);
    // `timeout: 30m`
    expect(Date.parse(approval.expires_at as string) - Date.parse(approval.created_at as string)).toBe(
      30 * 60_000,
    );
    expect(toolCallsIn(await mcpLog(server.key))).toEqual([]);

    const res = await decide(runId, approval.id, { decision: "approved", comment: "ok by me" });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: approval.id, status: "approved", comment: "ok by me" });
    expect(typeof res.body.decided_at).toBe("string");

    const done = await until(runId, finished, AUTH);
    expect(done.status).toBe("complete");
    expect(done.steps[0].output).toEqual({ results: ["deleted r1"] });
    expect(done.steps[0].tool_calls[0]).toMatchObject({
      name: "delete-record",
      result: "deleted r1",
      approval: { id: approval.id, status: "approved", comment: "ok by me" },
    });
    const calls = toolCallsIn(await mcpLog(server.key));
    expect(calls.map((c) => c.params?.name)).toEqual(["delete-record"]);
  });

  it("rejected with on_reject: fail, the step fails approval_rejected and the call is never made", async () => {
    const { runId, server, approval } = await gated("tools-logged");
    const res = await decide(runId, approval.id, { decision: "rejected", comment: "not this one" });
    expect(res.status).toBe(200);
    const done = await until(runId, finished, AUTH);
    expect(done.status).toBe("failed");
    expect(done.error).toMatchObject({ code: "approval_rejected", step: "act" });
    expect(done.error.message).toContain("not this one");
    expect(done.steps[1]).toMatchObject({
      status: "skipped",
      output: { skipped: true, reason: "run_failed" },
    });
    expect(toolCallsIn(await mcpLog(server.key))).toEqual([]);
  });

  it("rejected with on_reject: recover, the model hears why and the run goes on", async () => {
    const { runId, server, approval } = await gated("tools-recover");
    await decide(runId, approval.id, { decision: "rejected", comment: "use archive instead" }, {});
    const done = await until(runId, finished);
    expect(done.status).toBe("complete");
    expect(done.output.results[0]).toBe(
      "ERROR: A reviewer rejected this call; it was not made. Comment: use archive instead",
    );
    expect(done.steps[0].tool_calls[0]).toMatchObject({
      result: null,
      approval: { status: "rejected", comment: "use archive instead" },
    });
    expect(toolCallsIn(await mcpLog(server.key))).toEqual([]);
  });

  it("answers 400, 404 and 409 for a bad decision, an unknown approval and a second decision", async () => {
    const { runId, approval } = await gated("tools-logged");
    for (const body of [{ decision: "maybe" }, { decision: "approved", comment: 5 }, "not json", {}]) {
      const res = await decide(runId, approval.id, body);
      expect(res.status).toBe(400);
      expect(res.body.code).toBe("invalid_decision");
    }
    const missing = await decide(runId, "apr_00000000000000000000000000000000", { decision: "approved" });
    expect(missing.status).toBe(404);
    expect(missing.body.code).toBe("approval_not_found");
    expect((await decide(runId, approval.id, { decision: "approved" })).status).toBe(200);
    const again = await decide(runId, approval.id, { decision: "rejected" });
    expect(again.status).toBe(409);
    expect(again.body.code).toBe("approval_already_decided");
    await until(runId, finished, AUTH);
  });

  it("takes the workflow's credentials for listing and deciding", async () => {
    const { runId, approval } = await gated("tools-logged");
    expect((await approvals(runId, {})).status).toBe(401);
    expect((await decide(runId, approval.id, { decision: "approved" }, {})).status).toBe(401);
    expect(
      (await decide(runId, approval.id, { decision: "approved" }, { authorization: "Bearer nope" })).status,
    ).toBe(401);
    await decide(runId, approval.id, { decision: "rejected" });
    await until(runId, finished, AUTH);
  });

  it("accepts ktsu's POST /runs/{id}/steps/{step}/approval/decide", async () => {
    const { runId } = await gated("tools-logged");
    const res = await call(`/runs/${runId}/steps/act/approval/decide`, {
      method: "POST",
      headers: { "content-type": "application/json", ...AUTH },
      body: JSON.stringify({ decision: "approved" }),
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { status: string }).status).toBe("approved");
    expect((await until(runId, finished, AUTH)).status).toBe("complete");
    const none = await call(`/runs/${runId}/steps/act/approval/decide`, {
      method: "POST",
      headers: { "content-type": "application/json", ...AUTH },
      body: JSON.stringify({ decision: "approved" }),
    });
    expect(none.status).toBe(409);
    const other = await call(`/runs/${runId}/steps/after/approval/decide`, {
      method: "POST",
      headers: { "content-type": "application/json", ...AUTH },
      body: JSON.stringify({ decision: "approved" }),
    });
    expect(other.status).toBe(404);
  });

  it("notifies notify.url once, signed, with an absolute decide_url and no secret", async () => {
    const key = uniqueKey("notify");
    const { runId, approval } = await gated("tools-logged", { notify_url: `${TARGET}/echo?key=${key}` });
    const log = await logUntil(key, (l) => l.length > 0);
    expect(log).toHaveLength(1);
    const sent = log[0] as (typeof log)[number];
    const body = JSON.parse(sent.body) as Record<string, unknown>;
    expect(body).toMatchObject({ id: approval.id, status: "pending", tool: "delete-record", step: "act" });
    expect(body.decide_url).toBe(`http://workflow.test/runs/${runId}/approvals/${approval.id}`);
    // Standard Webhooks signature over id.timestamp.body with the workflow's SIGNING_SECRET.
    const secret = (env as unknown as Record<string, string>).SIGNING_SECRET as string;
    const raw = Uint8Array.from(atob(secret.slice("whsec_".length)), (c) => c.charCodeAt(0));
    const keyObj = await crypto.subtle.importKey("raw", raw, { name: "HMAC", hash: "SHA-256" }, false, [
      "sign",
    ]);
    const mac = await crypto.subtle.sign(
      "HMAC",
      keyObj,
      new TextEncoder().encode(
        `${sent.headers["webhook-id"]}.${sent.headers["webhook-timestamp"]}.${sent.body}`,
      ),
    );
    expect(sent.headers["webhook-signature"]).toBe(`v1,${btoa(String.fromCharCode(...new Uint8Array(mac)))}`);
    expect(sent.body).not.toContain(TOOL_TOKEN);
    expect(sent.body).not.toContain(secret);
    await decide(runId, approval.id, { decision: "rejected" });
    await until(runId, finished, AUTH);
  });

  it("stops sending an approval request once the approval is decided, listing it canceled", async () => {
    const key = uniqueKey("moot");
    // The reviewer's hook is down: the request is tried, then waits for its next attempt.
    const { runId, approval } = await gated("tools-logged", {
      notify_url: `${TARGET}/status/503?key=${key}`,
    });
    type Listed = {
      deliveries: Array<{ type: string; state: string; attempts: unknown[]; next_attempt_at: string | null }>;
    };
    const listed = async () =>
      ((await (await call(`/runs/${runId}/deliveries`, { headers: AUTH })).json()) as Listed).deliveries.find(
        (d) => d.type === "approval.requested",
      );
    const before = await poll(
      "the approval request's first attempt",
      listed,
      (d) => (d?.attempts.length ?? 0) > 0,
    );
    expect(before).toMatchObject({ state: "pending" });
    expect(before?.next_attempt_at).not.toBeNull();
    await decide(runId, approval.id, { decision: "approved" });
    await until(runId, finished, AUTH);
    const after = await listed();
    expect(after).toMatchObject({ state: "canceled", next_attempt_at: null });
    expect(after?.attempts).toHaveLength(before?.attempts.length ?? 0);
  });

  it("announces approval.requested on the run's event stream", async () => {
    const { runId, approval } = await gated("tools-logged");
    const res = await call(`/runs/${runId}/events`, { headers: AUTH });
    const reader = (res.body as ReadableStream<Uint8Array>).pipeThrough(new TextDecoderStream()).getReader();
    const text = await readUntil(reader, (t) => t.includes("event: approval.requested"), {
      what: "the event stream, for approval.requested",
    });
    await reader.cancel();
    const block = text.split("\n\n").find((b) => b.includes("event: approval.requested")) ?? "";
    const data = JSON.parse(block.split("data: ")[1] ?? "{}") as { approval: { id: string; status: string } };
    expect(data.approval).toMatchObject({ id: approval.id, status: "pending" });
    await decide(runId, approval.id, { decision: "rejected" });
    await until(runId, finished, AUTH);
  });
});

/** Moves an approval's timeout into the past in storage (time cannot be faked inside workerd). */
async function expireApproval(runId: string, id: string) {
  await runInDurableObject(runStub(runId), (_o, state) => {
    const key = `approval/${id}`;
    const rec = JSON.parse(state.storage.kv.get<string>(key) ?? "{}") as Record<string, unknown>;
    rec.expires_at = new Date(Date.now() - 1000).toISOString();
    state.storage.kv.put(key, JSON.stringify(rec));
  });
  // The next incarnation reads the moved-back time, as after a real half hour asleep.
  await evictDurableObject(runStub(runId));
}

describe("timeouts on the run object's alarm", () => {
  it("timeout_behavior fail: the alarm times the approval out and the step fails approval_timeout", async () => {
    const { runId, server, approval } = await gated("tools-logged");
    await expireApproval(runId, approval.id);
    expect(await runDurableObjectAlarm(runStub(runId))).toBe(true);
    const done = await until(runId, finished, AUTH);
    expect(done.status).toBe("failed");
    expect(done.error.code).toBe("approval_timeout");
    const list = await approvals(runId);
    expect(list.body.approvals[0]).toMatchObject({ status: "timeout" });
    expect(toolCallsIn(await mcpLog(server.key))).toEqual([]);
  });

  it("timeout_behavior reject (with recover): the model is told and the run completes", async () => {
    const { runId, approval } = await gated("tools-recover");
    await expireApproval(runId, approval.id);
    expect(await runDurableObjectAlarm(runStub(runId))).toBe(true);
    const done = await until(runId, finished);
    expect(done.status).toBe("complete");
    expect(done.output.results[0]).toBe("ERROR: No reviewer decided on this call in time; it was not made.");
  });

  it("arms the alarm at the approval's timeout when nothing else is running", async () => {
    const { runId, approval } = await gated("tools-logged");
    const alarm = await runInDurableObject(runStub(runId), (_o, state) => state.storage.getAlarm());
    // The heartbeat may still be armed from the step's start; once it fires, only the approval's
    // timeout (before the deadline) is left.
    await runDurableObjectAlarm(runStub(runId));
    const next = await runInDurableObject(runStub(runId), (_o, state) => state.storage.getAlarm());
    expect(next).toBe(Date.parse(approval.expires_at as string));
    expect(alarm).not.toBeNull();
    await decide(runId, approval.id, { decision: "rejected" });
    await until(runId, finished, AUTH);
  });
});

describe("eviction while pending", () => {
  it("keeps the approval, the conversation and the step's waiting state; the decision resumes the run", async () => {
    const { runId, server, tag, approval } = await gated("tools-logged");
    await evictDurableObject(runStub(runId));
    // Woken by a read: storage says the step waits.
    const e = await envelope(runId, AUTH);
    expect(e.status).toBe("running");
    expect(e.steps[0].status).toBe("pending_approval");
    await until(runId, waiting, AUTH);
    // The resumed step asked again and found the same approval: still one.
    const list = await approvals(runId);
    expect(list.body.approvals).toHaveLength(1);
    expect(list.body.approvals[0]).toMatchObject({ id: approval.id, status: "pending" });

    await evictDurableObject(runStub(runId));
    expect((await decide(runId, approval.id, { decision: "approved" })).status).toBe(200);
    const done = await until(runId, finished, AUTH);
    expect(done.status).toBe("complete");
    expect(done.steps[0].output).toEqual({ results: ["deleted r1"] });
    // The turn that asked was not asked of the model again: one call before, one after.
    expect(await modelCalls(tag)).toHaveLength(2);
    expect(done.steps[0].metrics.llm_calls).toBe(2);
    expect(toolCallsIn(await mcpLog(server.key))).toHaveLength(1);
  });

  it("an approval still pending when the run times out or is canceled is closed as timeout", async () => {
    const { runId, approval } = await gated("tools-logged");
    const res = await call(`/runs/${runId}/cancel`, { method: "POST", headers: AUTH });
    expect(res.status).toBe(202);
    const e = (await res.json()) as Envelope;
    expect(e.steps[0].status).toBe("canceled");
    const list = await approvals(runId);
    expect(list.body.approvals[0]).toMatchObject({ id: approval.id, status: "timeout" });
    expect((await decide(runId, approval.id, { decision: "approved" })).status).toBe(409);
  });
});
