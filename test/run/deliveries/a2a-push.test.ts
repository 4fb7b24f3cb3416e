/**
 * An A2A task's push notifications (src/run/deliveries/a2a-push.ts): the states a run went through,
 * read from what it recorded, and what each config is sent, in order, from the state it was made in.
 */
import { describe, expect, it } from "vitest";
import { createMasker } from "../../../src/engine/mask.ts";
import type { StepRecord } from "../../../src/engine/types.ts";
import { pushTargets, taskChanges } from "../../../src/run/deliveries/a2a-push.ts";
import type { RunDoc } from "../../../src/run/run-doc.ts";
import type { ApprovalRecord } from "../../../src/run/waits/approvals.ts";
import type { WaitRecord } from "../../../src/run/waits/waits.ts";

const T = (s: number) => new Date(Date.UTC(2026, 10, 29, 10, 0, s)).toISOString();

function doc(over: Partial<RunDoc> = {}): RunDoc {
  return {
    run_id: "r1",
    workflow_key: "w.workflow.yaml",
    status: "running",
    error: null,
    params: {},
    request: { headers: {}, a2a: { context_id: "ctx-1" } },
    created_at: T(0),
    deadline: T(300),
    finished_at: null,
    ...over,
  } as RunDoc;
}

const rec = (started: number, finished: number | null): StepRecord =>
  ({
    id: "x",
    status: finished === null ? "running" : "complete",
    started_at: T(started),
    finished_at: finished === null ? null : T(finished),
  }) as unknown as StepRecord;

const wait = (path: string, started: number, status: WaitRecord["status"]): WaitRecord => ({
  path,
  kind: "signal",
  name: "details",
  key: null,
  started_at: T(started),
  due: 0,
  status,
});

describe("an A2A task's states", () => {
  it("are submitted, working, waiting for input while a signal is awaited, working again, then its end", () => {
    const records = new Map([
      ["first", rec(1, 2)],
      ["details", rec(2, 5)],
      ["answer", rec(5, 6)],
    ]);
    const changes = taskChanges(
      doc({ status: "complete", finished_at: T(6) }),
      records,
      [],
      [wait("details", 2, "signaled")],
    );
    expect(changes).toEqual([
      { state: "TASK_STATE_SUBMITTED", at: T(0) },
      { state: "TASK_STATE_WORKING", at: T(1) },
      { state: "TASK_STATE_INPUT_REQUIRED", at: T(2) },
      { state: "TASK_STATE_WORKING", at: T(5) },
      { state: "TASK_STATE_COMPLETED", at: T(6) },
    ]);
  });

  it("wait for input from an approval asked until it was decided, and never repeat a state", () => {
    const approval = { created_at: T(3), decided_at: null, status: "pending" } as unknown as ApprovalRecord;
    const changes = taskChanges(doc(), new Map([["a", rec(1, null)]]), [approval], [wait("b", 2, "waiting")]);
    expect(changes.map((c) => c.state)).toEqual([
      "TASK_STATE_SUBMITTED",
      "TASK_STATE_WORKING",
      "TASK_STATE_INPUT_REQUIRED",
    ]);
  });
});

describe("what a push config is sent", () => {
  const masker = createMasker(["supersecret-value"]);
  const changes = taskChanges(
    doc({ status: "complete", finished_at: T(6) }),
    new Map([["a", rec(1, 6)]]),
    [],
    [],
  );

  it("is every change from the state the task was in when the config was made, the output before the end, in order", () => {
    const config = {
      id: "c1",
      url: "https://hooks.example/a2a",
      token: "tok",
      authentication: { scheme: "Bearer", credentials: "cred" },
      created_at: T(3),
    };
    const d = doc({ status: "complete", finished_at: T(6), a2a_push: [config] });
    const targets = pushTargets({ doc: d, changes, output: () => ({ said: "supersecret-value" }), masker });
    const bodies = targets.map((t) => JSON.parse(t.body()));
    expect(bodies.map((b) => b.statusUpdate?.status.state ?? "artifact")).toEqual([
      "TASK_STATE_WORKING",
      "artifact",
      "TASK_STATE_COMPLETED",
    ]);
    expect(bodies[1].artifactUpdate).toMatchObject({
      taskId: "r1",
      contextId: "ctx-1",
      lastChunk: true,
      artifact: { parts: [{ data: { said: "***" } }] },
    });
    expect(targets.map((t) => t.after)).toEqual([null, targets[0]?.id, targets[1]?.id]);
    expect(targets[0]?.headers).toEqual({
      "content-type": "application/a2a+json",
      "x-a2a-notification-token": "tok",
      authorization: "Bearer cred",
    });
  });

  it("is nothing for a run without configs", () => {
    expect(pushTargets({ doc: doc(), changes, output: () => null, masker })).toEqual([]);
  });
});
