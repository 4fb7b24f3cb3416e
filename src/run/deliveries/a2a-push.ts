/**
 * A2A push notifications (docs/a2a.md, "Push notifications"): a task's configs (at most 5, kept in
 * the run's document: a run without any writes nothing for them) and the deliveries they make.
 * Each config gets every change of the task's state from the one it was in when the config was
 * made, and the `output` artifact before the final state, each POSTed as an A2A `StreamResponse`
 * with the config's `token` as `X-A2A-Notification-Token` and its `authentication` as the
 * `Authorization` header, through the delivery schedule every notification has (retries, the
 * failed list, replay). A config's deliveries go in order: one is attempted once the one before it
 * was delivered or given up.
 *
 * The states follow from the run itself (what its records, approvals and waits say and when), so
 * nothing about them is written: submitted at its creation, working from its first step, waiting
 * for input from each approval asked or signal waited for until it was answered, then its end.
 */
import type { Json, JsonObject } from "../../bundle.ts";
import type { Masker } from "../../engine/mask.ts";
import type { StepRecord } from "../../engine/types.ts";
import type { PushConfig, RunDoc } from "../run-doc.ts";

export type { PushConfig };

import type { ApprovalRecord } from "../waits/approvals.ts";
import type { WaitRecord } from "../waits/waits.ts";
import { DEFAULT_SCHEDULE_S, type DeliveryTarget } from "./delivery-rules.ts";

export const MAX_PUSH_CONFIGS = 5;

export interface TaskChange {
  state: string;
  at: string;
}

const ENDED: Record<string, string> = {
  complete: "TASK_STATE_COMPLETED",
  failed: "TASK_STATE_FAILED",
  canceled: "TASK_STATE_CANCELED",
};

/** The task's states so far, each from when it began, in order (a state never follows itself). */
export function taskChanges(
  doc: RunDoc,
  records: ReadonlyMap<string, StepRecord>,
  approvals: readonly ApprovalRecord[],
  waits: readonly WaitRecord[],
): TaskChange[] {
  const points: Array<TaskChange & { order: number }> = [
    { state: "TASK_STATE_SUBMITTED", at: doc.created_at, order: 0 },
  ];
  let firstStart: string | null = null;
  for (const r of records.values())
    if (r.started_at && (firstStart === null || r.started_at < firstStart)) firstStart = r.started_at;
  if (firstStart) points.push({ state: "TASK_STATE_WORKING", at: firstStart, order: 1 });
  const input = (at: string, until: string | null) => {
    points.push({ state: "TASK_STATE_INPUT_REQUIRED", at, order: 2 });
    if (until) points.push({ state: "TASK_STATE_WORKING", at: until, order: 3 });
  };
  for (const a of approvals) input(a.created_at, a.status === "pending" ? null : a.decided_at);
  for (const w of waits) {
    if (w.kind !== "signal") continue;
    const done = w.status === "waiting" ? null : (records.get(w.path)?.finished_at ?? null);
    input(w.started_at, done);
  }
  const end = ENDED[doc.status];
  if (end && doc.finished_at) points.push({ state: end, at: doc.finished_at, order: 4 });
  points.sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : a.order - b.order));
  const out: TaskChange[] = [];
  for (const p of points) if (out.at(-1)?.state !== p.state) out.push({ state: p.state, at: p.at });
  return out;
}

/** What a config is sent, in order: the state it was made in and every change after it, the output artifact before the end. */
export interface PushSource {
  doc: RunDoc;
  changes: TaskChange[];
  /** The run's output (read only for a completed run's artifact). */
  output: () => Json;
  masker: Masker;
}

export function pushTargets(s: PushSource): DeliveryTarget[] {
  const { doc } = s;
  const configs = doc.a2a_push ?? [];
  if (configs.length === 0) return [];
  const request = doc.request as { a2a?: { context_id?: string } } | undefined;
  const ids = { taskId: doc.run_id, contextId: request?.a2a?.context_id ?? doc.run_id };
  const out: DeliveryTarget[] = [];
  for (const c of configs) {
    // From the state the task was in when the config was made.
    let from = 0;
    s.changes.forEach((ch, i) => {
      if (ch.at <= c.created_at) from = i;
    });
    const headers: Record<string, string> = { "content-type": "application/a2a+json" };
    if (c.token) headers["x-a2a-notification-token"] = c.token;
    if (c.authentication?.credentials)
      headers.authorization = `${c.authentication.scheme} ${c.authentication.credentials}`;
    let previous: string | null = null;
    let n = 0;
    const add = (at: string, body: () => JsonObject) => {
      const id = `msg_${doc.run_id}_a2a_${c.id}_${String(n++).padStart(3, "0")}`;
      out.push({
        id,
        type: "a2a.push",
        url: c.url,
        fromSecret: false,
        signSecret: null,
        schedule: DEFAULT_SCHEDULE_S,
        createdMs: Date.parse(at),
        body: () => JSON.stringify(s.masker.maskJson(body())),
        idempotencyKey: null,
        entry: null,
        headers,
        after: previous,
      });
      previous = id;
    };
    for (const ch of s.changes.slice(from)) {
      if (ch.state === "TASK_STATE_COMPLETED") {
        add(ch.at, () => {
          const output = s.output();
          const parts: Json[] = [{ data: output }];
          if (typeof output === "string") parts.push({ text: output });
          return {
            artifactUpdate: {
              ...ids,
              artifact: { artifactId: "output", name: "output", parts },
              append: false,
              lastChunk: true,
            },
          };
        });
      }
      add(ch.at, () => ({ statusUpdate: { ...ids, status: statusOf(doc, ch) } }));
    }
  }
  return out;
}

function statusOf(doc: RunDoc, ch: TaskChange): JsonObject {
  const status: JsonObject = { state: ch.state, timestamp: ch.at };
  if ((ch.state === "TASK_STATE_FAILED" || ch.state === "TASK_STATE_CANCELED") && doc.error) {
    status.message = {
      messageId: `${doc.run_id}:${ch.state}`,
      role: "ROLE_AGENT",
      parts: [{ text: `${doc.error.code}: ${doc.error.message}` }],
    };
  }
  return status;
}
