/**
 * Input mid-task (docs/a2a.md, "Input"): a `SendMessage` whose `message.taskId` names a task in
 * `TASK_STATE_INPUT_REQUIRED` answers what it waits for. An approval: a data part `{"approve": true |
 * false, "comment"?}` decides it (`metadata.approval` names one when several wait; default the
 * oldest). A signal wait: the data part is the signal's payload (`metadata.signal` names the signal
 * when the run waits for several), checked against the wait's schema (-32602 naming each failing
 * field). A finished task: -32004; a task that waits for nothing: -32004; an unknown one: -32001.
 */
import type { JsonObject } from "../../bundle.ts";
import { isObject } from "../../common/guards.ts";
import { runStub } from "../../run/run-rpc.ts";
import { awaitedBy, callerState, isActive } from "../protocol-run.ts";
import { type A2aContext, taskRun } from "./a2a-context.ts";
import { a2aError, badRequest } from "./a2a-errors.ts";
import type { ReadMessage } from "./a2a-message.ts";

/** Hands the message to what the task waits for; the task's (run's) id. */
export async function answerInput(m: ReadMessage, ctx: A2aContext): Promise<string> {
  const { view } = await taskRun(m.taskId, ctx);
  const runId = view.envelope.run_id;
  if (!isActive(view.envelope))
    throw a2aError("UNSUPPORTED_OPERATION", "the task has finished", { taskId: runId });
  if (callerState(view) !== "input_required")
    throw a2aError("UNSUPPORTED_OPERATION", "the task is not waiting for input", { taskId: runId });
  const stub = runStub(ctx.env, runId);
  if (!stub) throw a2aError("TASK_NOT_FOUND", "the task is gone", { taskId: runId });
  const awaited = awaitedBy(view);
  const meta = isObject(m.metadata) ? (m.metadata as JsonObject) : {};
  const data = isObject(m.data) ? (m.data as JsonObject) : null;
  if (data && typeof data.approve === "boolean" && awaited.some((a) => a.kind === "approval")) {
    const pending = ((await stub.approvals()) ?? []).filter((a) => a.status === "pending");
    const target =
      typeof meta.approval === "string" ? pending.find((a) => a.id === meta.approval) : pending[0];
    if (!target)
      throw badRequest("no such approval waits", [
        { field: "message.metadata.approval", description: "not a pending approval of this task" },
      ]);
    const comment = typeof data.comment === "string" ? data.comment : null;
    const decided = await stub.decide({ id: target.id }, data.approve ? "approved" : "rejected", comment);
    if (decided.outcome !== "decided")
      throw a2aError("UNSUPPORTED_OPERATION", "the approval was already decided", { taskId: runId });
    return runId;
  }
  const signals = [...new Set(awaited.filter((a) => a.kind === "signal").map((a) => a.signal as string))];
  if (signals.length === 0) {
    throw badRequest("the task waits for an approval", [
      {
        field: "message.parts",
        description: 'answer with a data part {"approve": true} or {"approve": false, "comment": "…"}',
      },
    ]);
  }
  const name = typeof meta.signal === "string" ? meta.signal : signals.length === 1 ? signals[0] : null;
  if (!name || !signals.includes(name)) {
    throw badRequest("name the signal this message answers", [
      { field: "message.metadata.signal", description: `one of: ${signals.join(", ")}` },
    ]);
  }
  if (!data)
    throw badRequest("a signal's payload is a data part", [
      { field: "message.parts", description: "a data part (an object) is required" },
    ]);
  const result = await stub.signal(name, data);
  if (result.outcome === "invalid") {
    throw badRequest(
      `the data does not match the signal ${name}'s schema`,
      result.errors.map((x) => ({ field: `message.parts.data${x.path}`, description: x.message })),
    );
  }
  if (result.outcome !== "delivered" && result.outcome !== "kept")
    throw a2aError("UNSUPPORTED_OPERATION", "the task no longer waits for this signal", { taskId: runId });
  return runId;
}
