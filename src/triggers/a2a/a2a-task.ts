/**
 * A run as an A2A Task (docs/a2a.md, "Tasks"): `id` the run id, `contextId` the one it was started
 * in, `status` its state mapped as the protocol names them (pending or queued: SUBMITTED; running,
 * a durable sleep included: WORKING; waiting for an approval or a signal: INPUT_REQUIRED, the
 * status message saying what is awaited, with the signal's schema or the approval as a data part;
 * then COMPLETED, FAILED with the code and the masked message, CANCELED), the output as the
 * `output` artifact once complete, and the message that started it as `history`.
 */
import type { Bundle, CompiledStep, CompiledWorkflow, Json, JsonObject, WaitStep } from "../../bundle.ts";
import type { Envelope } from "../../run/envelope.ts";
import type { RunView } from "../../run/run-calls.ts";
import type { ApprovalRecord } from "../../run/waits/approvals.ts";
import { awaitedBy, type CallerState, callerState } from "../protocol-run.ts";

export const STATES: Record<CallerState, string> = {
  submitted: "TASK_STATE_SUBMITTED",
  working: "TASK_STATE_WORKING",
  input_required: "TASK_STATE_INPUT_REQUIRED",
  completed: "TASK_STATE_COMPLETED",
  failed: "TASK_STATE_FAILED",
  canceled: "TASK_STATE_CANCELED",
};

export const TERMINAL_STATES = new Set(["TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED"]);

/** What the run recorded of the A2A request that started it (`request.a2a`). */
export interface A2aRecord {
  context_id: string;
  message: JsonObject;
}

export function a2aRecordOf(e: Pick<Envelope, "request">): A2aRecord | null {
  const req = e.request as { a2a?: A2aRecord } | null;
  return req?.a2a && typeof req.a2a.context_id === "string" ? req.a2a : null;
}

export function contextOf(e: Pick<Envelope, "run_id" | "request">): string {
  return a2aRecordOf(e)?.context_id ?? e.run_id;
}

export interface TaskOptions {
  historyLength?: number | null;
  includeArtifacts?: boolean;
}

/** What a task says of what it waits for: the pending approvals and the deployed bundle (signal schemas). */
export interface InputFacts {
  approvals: ApprovalRecord[];
  bundle: Bundle;
}

export function taskOf(view: RunView, facts: InputFacts | null, opts: TaskOptions = {}): JsonObject {
  const e = view.envelope;
  const state = callerState(view);
  const task: JsonObject = {
    id: e.run_id,
    contextId: contextOf(e),
    status: statusOf(view, state, facts),
  };
  if (state === "completed" && opts.includeArtifacts !== false) task.artifacts = [outputArtifact(e.output)];
  const history = historyOf(e, opts.historyLength);
  if (history) task.history = history;
  task.metadata = { workflow: e.workflow, run_url: `/runs/${e.run_id}` };
  return task;
}

export function statusOf(view: RunView, state: CallerState, facts: InputFacts | null): JsonObject {
  const e = view.envelope;
  const status: JsonObject = { state: STATES[state], timestamp: timestampOf(view, state) };
  const parts = messageParts(view, state, facts);
  if (parts) {
    status.message = {
      messageId: `${e.run_id}:${state}:${status.timestamp}`,
      role: "ROLE_AGENT",
      taskId: e.run_id,
      contextId: contextOf(e),
      parts,
    };
  }
  return status;
}

function messageParts(view: RunView, state: CallerState, facts: InputFacts | null): Json[] | null {
  const e = view.envelope;
  if (state === "failed" || state === "canceled") {
    const error = e.error ?? { code: state, message: `the run ${state}` };
    return [
      { text: `${error.code}: ${error.message}` },
      { data: { code: error.code, message: error.message } },
    ];
  }
  if (state !== "input_required") return null;
  const parts: Json[] = [];
  for (const a of awaitedBy(view)) {
    if (a.kind === "approval") {
      const approval = facts?.approvals.find((x) => x.step === a.step && x.status === "pending");
      parts.push({
        text: `step ${a.step} waits for an approval: answer with a data part {"approve": true} or {"approve": false, "comment": "…"}`,
      });
      if (approval) {
        parts.push({
          data: {
            approval: {
              id: approval.id,
              step: approval.step,
              kind: approval.kind,
              tool: approval.tool,
              arguments: approval.arguments,
              expires_at: approval.expires_at,
            },
          },
        });
      }
    } else {
      const wf = facts ? facts.bundle.workflows[facts.bundle.invocable[e.workflow] ?? ""] : undefined;
      const step = wf && facts ? stepAt(facts.bundle, wf, a.step) : null;
      const schema = step?.kind === "wait" ? ((step as WaitStep).signal?.schema ?? null) : null;
      parts.push({
        text: `step ${a.step} waits for the signal ${a.signal}: answer with a data part, its payload`,
      });
      parts.push({ data: { signal: a.signal, schema } });
    }
  }
  return parts;
}

/** The compiled step at a record path (`parent/child`, a fan-out's `step/3` is `step`'s). */
function stepAt(bundle: Bundle, wf: CompiledWorkflow, path: string): CompiledStep | null {
  let current: CompiledWorkflow | undefined = wf;
  let step: CompiledStep | null = null;
  for (const part of path.split("/")) {
    if (/^\d+$/.test(part)) continue;
    step = current?.steps.find((s) => s.id === part) ?? null;
    if (!step) return null;
    current = step.kind === "workflow" ? bundle.workflows[step.workflow] : undefined;
  }
  return step;
}

/** When the task's status last changed: its end, the wait it is in, the latest step start, its creation. */
function timestampOf(view: RunView, state: CallerState): string {
  const e = view.envelope;
  if (e.finished_at) return e.finished_at;
  let last = e.created_at;
  const walk = (steps: Envelope["steps"]) => {
    for (const s of steps) {
      for (const t of [s.started_at, s.finished_at]) if (t && t > last) last = t;
      walk(s.steps ?? []);
    }
  };
  if (state !== "submitted") walk(e.steps);
  return last;
}

export function outputArtifact(output: Json): JsonObject {
  const parts: Json[] = [{ data: output }];
  if (typeof output === "string") parts.push({ text: output });
  return { artifactId: "output", name: "output", parts };
}

function historyOf(e: Envelope, historyLength: number | null | undefined): Json[] | null {
  if (historyLength === 0) return null;
  const record = a2aRecordOf(e);
  const all: Json[] = record ? [record.message] : [];
  return historyLength && historyLength > 0 ? all.slice(-historyLength) : all;
}
