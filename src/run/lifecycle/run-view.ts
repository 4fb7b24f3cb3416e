/**
 * What readers see of a run: its envelope (masked, with steps held by an approval or a wait shown
 * as such right after a wake-up, before they have asked again), its history as events for a new
 * listener of its stream, and its `run.completed` event.
 */
import type { Json, JsonObject } from "../../bundle.ts";
import type { Masker } from "../../engine/mask.ts";
import { heldRecords } from "../../engine/step-status.ts";
import type { StepRecord } from "../../engine/types.ts";
import { buildEnvelope, type Envelope } from "../envelope.ts";
import { compensationEvent, type RunEvent, replayEvents, scoredEvent } from "../events/events.ts";
import type { JudgedScore, RunDoc } from "../run-doc.ts";
import { forEachRecordPath } from "../run-graph.ts";
import { isFinished } from "../run-store.ts";
import { publicApproval } from "../waits/approvals.ts";
import type { RunBooks } from "./run-books.ts";

/** The run's envelope at `now`, masked (docs/http-api.md). */
export function envelopeOf(
  doc: RunDoc,
  records: ReadonlyMap<string, StepRecord>,
  books: RunBooks,
  masker: Masker,
  now: number,
  deliveries: Envelope["deliveries"] = [],
): Envelope {
  // Right after a wake-up a resumed step has not asked again yet: storage says what holds it.
  const shown = isFinished(doc) ? records : heldRecords(records, books.held());
  return masker.maskJson(
    buildEnvelope(doc, shown, now, deliveries) as unknown as Json,
  ) as unknown as Envelope;
}

/** The run so far as events (ends with run.completed once it has ended). */
export function historyOf(
  doc: RunDoc,
  records: ReadonlyMap<string, StepRecord>,
  books: RunBooks,
  masker: Masker,
  now: number,
): RunEvent[] {
  const wf = doc.def.workflows[doc.workflow_key];
  const inOrder: Array<[string, StepRecord]> = [];
  // Every step record, parents before their children, in pipeline order.
  if (wf)
    forEachRecordPath(doc.def, wf, records, (path) => {
      const rec = records.get(path);
      if (rec) inOrder.push([path, rec]);
    });
  const history = replayEvents(
    inOrder,
    doc.finished_at ?? new Date(now).toISOString(),
    books.approvals(doc).list().map(publicApproval),
  );
  // Judged scores, once written (after the answer), per step: before the end, where a reader stops.
  const judged = new Map<string, JudgedScore[]>();
  for (const s of doc.judged?.scores ?? []) judged.set(s.step, [...(judged.get(s.step) ?? []), s]);
  for (const [path, scores] of judged) {
    const ev = scoredEvent(path, scores, records.get(path)?.variant ?? null);
    if (ev) history.push(ev);
  }
  if (isFinished(doc)) history.push(completedEventOf(envelopeOf(doc, records, books, masker, now), now));
  // Then its compensations, as they were sent live (run-compensation.ts).
  for (const st of doc.compensation?.steps ?? []) {
    if (st.started_at === null) continue;
    history.push(
      compensationEvent(
        "compensation.started",
        { ...st, status: "running", attempts: 0, error: null, finished_at: null },
        st.started_at,
      ),
    );
    if ((st.status === "complete" || st.status === "failed") && st.finished_at)
      history.push(
        compensationEvent(
          st.status === "complete" ? "compensation.completed" : "compensation.failed",
          st,
          st.finished_at,
        ),
      );
  }
  return history;
}

/** The `run.completed` event of an ended run. */
export function completedEventOf(e: Envelope, now: number): RunEvent {
  return {
    type: "run.completed",
    time: e.finished_at ?? new Date(now).toISOString(),
    // The whole envelope, as GET /runs/{id} answers (its run_id, status, error, output, totals among it).
    data: e as unknown as JsonObject,
  };
}
