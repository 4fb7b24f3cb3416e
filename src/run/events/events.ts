/**
 * Live run events as Server-Sent Events (GET /runs/{id}/events). A new listener first gets the
 * run's history, rebuilt from the step records (so no event log is stored and eviction loses
 * nothing), then follows live events until the run ends and the stream closes. Data is taken
 * from records that are already masked.
 */
import type { Json, JsonObject } from "../../bundle.ts";
import { asStarted } from "../../engine/step-status.ts";
import type { StepRecord } from "../../engine/types.ts";
import type { CompensationStep } from "../run-doc.ts";

export type RunEventType =
  | "step.started"
  | "step.completed"
  | "step.skipped"
  | "step.failed"
  | "step.canceled"
  | "step.pending_approval"
  | "step.waiting"
  | "step.scored"
  | "approval.requested"
  | "approval.decided"
  | "run.completed"
  | "compensation.started"
  | "compensation.completed"
  | "compensation.failed"
  | "run.started"
  | "run.queued"
  | "output.delta"
  | "output.reset";

export interface RunEvent {
  type: RunEventType;
  time: string;
  data: JsonObject;
}

const TYPE_OF_STATUS: Partial<Record<StepRecord["status"], RunEventType>> = {
  running: "step.started",
  complete: "step.completed",
  skipped: "step.skipped",
  failed: "step.failed",
  canceled: "step.canceled",
  pending_approval: "step.pending_approval",
  waiting: "step.waiting",
};

export function stepEvent(path: string, rec: StepRecord, fallbackTime: string): RunEvent | null {
  const type = TYPE_OF_STATUS[rec.status];
  if (!type) return null;
  const time =
    (type === "step.started" || type === "step.pending_approval" || type === "step.waiting"
      ? rec.started_at
      : rec.finished_at) ?? fallbackTime;
  return {
    type,
    time,
    data: {
      step: path,
      id: rec.id,
      status: rec.status,
      output: rec.output,
      error: rec.error as Json,
      metrics: rec.metrics as unknown as Json,
      started_at: rec.started_at,
      finished_at: rec.finished_at,
    },
  };
}

/**
 * `step.scored` (docs/file-format.md, "Scores"): a step's scores, `expr` ones right after its
 * `step.completed`, judged ones once written (after the answer). Null when there are none.
 */
export function scoredEvent(
  path: string,
  scores: ReadonlyArray<{
    name: string;
    value: number | null;
    reason: string | null;
    error: string | null;
    at: string;
  }>,
  variant: string | null,
): RunEvent | null {
  if (scores.length === 0) return null;
  return {
    type: "step.scored",
    time: scores[scores.length - 1]?.at as string,
    data: {
      step: path,
      variant,
      scores: scores.map((s) => ({
        name: s.name,
        value: s.value,
        reason: s.reason,
        error: s.error,
        at: s.at,
      })),
    },
  };
}

/** `approval.requested` / `approval.decided`: the approval record (masked) is the event's data. */
export function approvalEvent(
  type: "approval.requested" | "approval.decided",
  approval: { created_at: string; decided_at: string | null },
): RunEvent {
  return {
    type,
    time: (type === "approval.decided" ? approval.decided_at : null) ?? approval.created_at,
    data: { approval: approval as unknown as Json },
  };
}

/**
 * The history of a run as events, in time order (records given in pipeline order). Steps that
 * never started and were skipped when the run ended carry no time of their own: `fallbackTime`
 * (the run's end) stands in.
 */
export function replayEvents(
  records: Array<[string, StepRecord]>,
  fallbackTime: string,
  approvals: Array<{ status: string; created_at: string; decided_at: string | null }> = [],
): RunEvent[] {
  const events: RunEvent[] = [];
  for (const a of approvals) {
    events.push(approvalEvent("approval.requested", a));
    if (a.status !== "pending") events.push(approvalEvent("approval.decided", a));
  }
  for (const [path, rec] of records) {
    if (rec.started_at && rec.status !== "pending") {
      // Exactly what was sent live when the step started: nothing of its outcome yet.
      const started = stepEvent(path, asStarted(rec), fallbackTime);
      if (started) events.push(started);
    }
    if (rec.status === "pending_approval" || rec.status === "waiting") {
      // Still waiting: a new listener learns it, or it would take the step for running.
      const waiting = stepEvent(path, rec, fallbackTime);
      if (waiting) events.push(waiting);
    } else if (rec.status !== "running" && rec.status !== "pending") {
      const done = stepEvent(path, rec, fallbackTime);
      if (done) events.push(done);
      const scored =
        rec.status === "complete" ? scoredEvent(path, rec.scores ?? [], rec.variant ?? null) : null;
      if (scored) events.push({ ...scored, time: done?.time ?? scored.time });
    }
  }
  // Stable: events at the same instant keep pipeline order.
  return events.sort((a, b) => Date.parse(a.time) - Date.parse(b.time));
}

const encoder = new TextEncoder();

function frame(seq: number, ev: RunEvent): Uint8Array {
  return encoder.encode(
    `id: ${seq}\nevent: ${ev.type}\ndata: ${JSON.stringify({ type: ev.type, time: ev.time, ...ev.data })}\n\n`,
  );
}

/** A compensation's start or end (docs/file-format.md, "Compensation"): its progress record is the data. */
export function compensationEvent(
  type: "compensation.started" | "compensation.completed" | "compensation.failed",
  st: CompensationStep,
  time: string,
): RunEvent {
  return { type, time, data: { ...st } };
}

/** How a stream starts: an invoke's own stream opens with `run.started` (or `run.queued`); `skip`: Last-Event-ID. */
export interface StreamStart {
  /** `run.started` / `run.queued` first, with `{run_id, workflow, trace_id}` (an invoke's stream). */
  opening?: RunEvent;
  /** Events the client has already had (its `Last-Event-ID`): they are not sent again. */
  skip?: number;
}

/**
 * Fans events out to every open SSE stream of one run, and keeps what a streaming step has
 * generated so far (docs/agents-and-tools.md, "Streaming") in memory until the step has ended, so a
 * listener that connects or reconnects meanwhile gets it; deltas are never stored.
 */
export class EventHub {
  private readonly listeners = new Set<{ writer: WritableStreamDefaultWriter<Uint8Array>; seq: number }>();
  /** The deltas of steps still generating, in order. */
  private deltas: RunEvent[] = [];

  /** A streaming response that replays `history`, then follows until `close()` (or at once when `ended`). */
  subscribe(history: RunEvent[], ended: boolean, start: StreamStart = {}): Response {
    const { readable, writable } = new TransformStream<Uint8Array, Uint8Array>();
    const listener = { writer: writable.getWriter(), seq: 0 };
    const replay = [...(start.opening ? [start.opening] : []), ...history, ...(ended ? [] : this.deltas)];
    for (const ev of replay) {
      listener.seq += 1;
      if (listener.seq > (start.skip ?? 0)) listener.writer.write(frame(listener.seq, ev)).catch(() => {});
    }
    if (ended) listener.writer.close().catch(() => {});
    else this.listeners.add(listener);
    return new Response(readable, {
      headers: {
        "content-type": "text/event-stream; charset=utf-8",
        "cache-control": "no-store",
        "x-accel-buffering": "no",
      },
    });
  }

  /**
   * What a run's live listeners hear as the run goes (the lifecycle's news): a step's record
   * changed, a streaming step's text, an approval was asked or decided, the run ended (its last
   * event, then the stream closes). Nothing is built while nobody listens, but a streaming step's
   * text is kept until the step ends (a listener may connect meanwhile). `finishedAt`: the run's
   * end, if it has one.
   */
  news(finishedAt: () => string | null) {
    return {
      stepChanged: (path: string, rec: StepRecord) => {
        // A step that ended carries its whole output: its deltas are no longer needed.
        if (rec.status !== "running" && this.deltas.length > 0)
          this.deltas = this.deltas.filter((d) => d.data.step !== path);
        if (!this.listening) return;
        const ev = stepEvent(path, rec, finishedAt() ?? new Date().toISOString());
        if (ev) this.publish(ev);
        // Its `expr` scores, taken as it completed, follow its completion.
        const scored =
          rec.status === "complete" ? scoredEvent(path, rec.scores ?? [], rec.variant ?? null) : null;
        if (scored && ev) this.publish({ ...scored, time: ev.time });
      },
      output: (path: string, text: string | null) => {
        const time = new Date().toISOString();
        if (text === null) {
          // What came is void (a repair, a fallback): listeners are told, the kept deltas go.
          this.deltas = this.deltas.filter((d) => d.data.step !== path);
          const reset: RunEvent = { type: "output.reset", time, data: { step: path } };
          this.deltas.push(reset);
          if (this.listening) this.publish(reset);
          return;
        }
        const ev: RunEvent = { type: "output.delta", time, data: { step: path, text } };
        this.deltas.push(ev);
        if (this.listening) this.publish(ev);
      },
      approvalEvent: (
        type: "approval.requested" | "approval.decided",
        approval: { created_at: string; decided_at: string | null },
      ) => {
        if (this.listening) this.publish(approvalEvent(type, approval));
      },
      ended: (completed: () => RunEvent, compensating: boolean) => {
        this.deltas = [];
        if (this.listening) this.publish(completed());
        // A compensation phase follows: its events come, then the stream closes.
        if (!compensating) this.close();
      },
      compensationEvent: (ev: RunEvent) => {
        if (this.listening) this.publish(ev);
      },
      compensationEnded: () => this.close(),
    };
  }

  /** Whether anyone is listening (events are not even built otherwise). */
  get listening(): boolean {
    return this.listeners.size > 0;
  }

  publish(ev: RunEvent): void {
    for (const l of this.listeners) {
      l.writer.write(frame(++l.seq, ev)).catch(() => this.listeners.delete(l));
    }
  }

  close(): void {
    for (const l of this.listeners) l.writer.close().catch(() => {});
    this.listeners.clear();
  }
}
