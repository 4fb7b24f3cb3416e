/**
 * One run's trace (docs/operations.md, "Traces"): its id, kept in the run's document from its
 * creation; the spans of its steps and of the run itself, built from the records at checkpoints
 * and at the end; the client spans its requests made; and the export of all of them, in
 * batches, after the answer. A batch the collector did not take is kept in the run's `trace` row
 * and tried again from the run's alarm EXPORT_RETRIES times, then dropped and counted. Without
 * an endpoint nothing is collected and nothing is written: only the `traceparent` travels.
 */
import type { CompiledWorkflow } from "../../bundle.ts";
import { shortenedMs } from "../../common/shortened-ms.ts";
import type { Masker } from "../../engine/mask.ts";
import {
  newTraceId,
  type Span,
  type SpanAttributes,
  SpanKind,
  type SpanSink,
  type StepTracer,
  stepSpanId,
  stepTracer,
  type TraceRef,
} from "../../engine/trace.ts";
import type { StepRecord } from "../../engine/types.ts";
import { type CompensationStep, type RunDoc, traceOf } from "../run-doc.ts";
import { type GraphNode, runGraph } from "../run-graph.ts";

/** At most this many spans go in one export request; as many waiting send one at once. */
export const EXPORT_BATCH = 200;
/** A batch the collector did not take is tried this many times more, then dropped. */
export const EXPORT_RETRIES = 3;
/** The first retry comes this long after the failure, then twice as long each time. */
export const EXPORT_RETRY_MS = 2_000;

/** The first retry's delay in use: EXPORT_RETRY_MS, or the `TRACE_RETRY_MS` var (tests shorten it; at most 2 s). */
export function exportRetryMs(env: object): number {
  return shortenedMs(env, "TRACE_RETRY_MS", EXPORT_RETRY_MS);
}

/** The run's `trace` row (run-store.ts keeps it with the run's other rows). */
export interface TraceRowPort {
  get(): string | undefined;
  put(json: string): void;
  delete(): void;
}

/** A batch waiting to be tried again. */
interface Pending {
  spans: Span[];
  /** Retries made so far. */
  tries: number;
  /** Epoch ms of the next try. */
  at: number;
}

/** The `trace` row: written only when an export failed. */
interface TraceRow {
  pending: Pending | null;
  dropped: number;
}

/** A new run's trace: the caller's (a valid `traceparent`) or a new one; a re-run's is always new. */
export function newTrace(caller: { traceId: string; spanId: string } | null): TraceRef {
  return caller ? { id: caller.traceId, parent: caller.spanId } : { id: newTraceId(), parent: null };
}

export class RunTrace {
  /** Whether spans are collected (the Worker has an endpoint). */
  readonly exporting: boolean;
  private readonly row: TraceRowPort;
  private buffer: Span[] = [];
  /** Step paths whose spans were handed over in this incarnation. */
  private handed = new Set<string>();
  private pending: Pending | null = null;
  /** The `trace` row exists (loaded, or written since): known here, not read again per export. */
  private stored = false;
  private inFlight = false;
  /** Spans dropped so far (the run's `spans_dropped`). */
  dropped = 0;
  /** Told when EXPORT_BATCH spans wait. */
  private full: () => void = () => {};
  /** The run's last spans, built when the export takes them (not before the answer). */
  private atEnd: (() => void) | null = null;

  private readonly retryMs: number;

  constructor(row: TraceRowPort, exporting: boolean, retryMs = EXPORT_RETRY_MS) {
    this.row = row;
    this.retryMs = retryMs;
    this.exporting = exporting;
  }

  /** Where client spans go: this trace's buffer, or nowhere. */
  readonly sink: SpanSink = (span) => {
    if (!this.exporting) return;
    this.buffer.push(span);
    if (this.buffer.length >= EXPORT_BATCH) this.full();
  };

  onFull(fn: () => void): void {
    this.full = fn;
  }

  /** What an earlier incarnation left: a batch to try again, and the count of dropped spans. */
  load(): void {
    const text = this.row.get();
    if (text === undefined) return;
    this.stored = true;
    const row = JSON.parse(text) as TraceRow;
    this.pending = row.pending;
    this.dropped = row.dropped;
  }

  /** The tracer of delivery attempts: client spans under the run's root span. */
  rootTracer(doc: RunDoc, now: () => number): StepTracer {
    const ref = traceOf(doc);
    return stepTracer(ref, stepSpanId(ref.id, ""), now, this.sink);
  }

  /**
   * The spans of the steps that finished and were not handed over yet (nor before the run's last
   * checkpoint, `doc.trace.through`); a step reused by a re-run is not exported again. Returns
   * how many were handed over (then `through` moved: the document must be written with it).
   */
  steps(doc: RunDoc, wf: CompiledWorkflow, records: ReadonlyMap<string, StepRecord>, now: number): number {
    if (!this.exporting) return 0;
    let handed = 0;
    const ref = traceOf(doc);
    const through = doc.trace?.through ?? 0;
    const nodes = new Map<string, GraphNode>();
    for (const n of runGraph(doc.def, wf)) nodes.set(n.path, n);
    for (const [path, rec] of records) {
      if (this.handed.has(path) || rec.reused_from || rec.started_at === null || rec.finished_at === null)
        continue;
      if (rec.status === "skipped" || rec.status === "pending") continue;
      const end = Date.parse(rec.finished_at);
      if (end <= through) continue;
      this.handed.add(path);
      this.buffer.push(stepSpan(ref, path, rec, nodes, end));
      handed += 1;
    }
    if (doc.trace && handed > 0) doc.trace.through = now;
    return handed;
  }

  /** The tracer of one compensation's attempts: client spans under its own span (compensation). */
  compensationTracer(doc: RunDoc, path: string, now: () => number): StepTracer | undefined {
    if (!this.exporting) return undefined;
    const ref = traceOf(doc);
    return stepTracer(ref, stepSpanId(ref.id, `${path}:compensate`), now, this.sink);
  }

  /** One compensation's span once it has ended, under the run's root (docs/operations.md, "Traces"). */
  compensation(doc: RunDoc, st: CompensationStep): void {
    if (!this.exporting || st.started_at === null || st.finished_at === null) return;
    const ref = traceOf(doc);
    const span: Span = {
      traceId: ref.id,
      spanId: stepSpanId(ref.id, `${st.step}:compensate`),
      parentSpanId: stepSpanId(ref.id, ""),
      name: `compensate ${st.step}`,
      kind: SpanKind.INTERNAL,
      startMs: Date.parse(st.started_at),
      endMs: Date.parse(st.finished_at),
      attributes: {
        "workflow.step.path": st.step,
        "workflow.compensation.status": st.status,
        "workflow.compensation.attempts": st.attempts,
      },
    };
    if (st.status === "failed") span.error = st.error?.code ?? "failed";
    this.buffer.push(span);
  }

  /** The run's root span (at its end). */
  root(doc: RunDoc, wf: CompiledWorkflow): void {
    if (!this.exporting) return;
    const ref = traceOf(doc);
    const attrs: SpanAttributes = {
      "workflow.name": wf.name,
      "workflow.run_id": doc.run_id,
    };
    if (wf.version !== null) attrs["workflow.version"] = wf.version;
    if (doc.rerun_of) attrs["workflow.rerun_of"] = doc.rerun_of;
    const span: Span = {
      traceId: ref.id,
      spanId: stepSpanId(ref.id, ""),
      parentSpanId: ref.parent,
      name: `workflow ${wf.name}`,
      kind: SpanKind.SERVER,
      startMs: Date.parse(doc.created_at),
      endMs: Date.parse(doc.finished_at ?? doc.created_at),
      attributes: attrs,
    };
    if (doc.status === "failed" || doc.status === "canceled") span.error = doc.error?.code ?? doc.status;
    this.buffer.push(span);
  }

  /** The run ended: `build` makes its last spans, when the export takes them (after the answer). */
  ended(build: () => void): void {
    if (this.exporting) this.atEnd = build;
  }

  /** Whether an export should go now: spans wait (none in flight), or a retry is due. */
  due(now: number): boolean {
    if (!this.exporting || this.inFlight) return false;
    return this.pending ? this.pending.at <= now : this.buffer.length > 0 || this.atEnd !== null;
  }

  /** When a retry is due (null: none waits). */
  get next(): number | null {
    return this.pending?.at ?? null;
  }

  /** The batch to send now, masked (null: nothing is due). The caller reports with `sent`. */
  take(now: number, masker: Masker): Span[] | null {
    if (!this.due(now)) return null;
    this.inFlight = true;
    if (this.pending) return this.pending.spans;
    const build = this.atEnd;
    this.atEnd = null;
    build?.();
    const batch = this.buffer.splice(0, EXPORT_BATCH).map((s) => maskSpan(s, masker));
    this.pending = { spans: batch, tries: -1, at: now };
    return batch;
  }

  /**
   * How the batch from `take` went. Returns how many spans were dropped by it (0 unless this was
   * its last try). A failure is kept in the `trace` row for the alarm; so is the count of dropped
   * spans while the run is active (its log line says it); a row no longer needed goes.
   */
  sent(ok: boolean, now: number, ended: boolean): number {
    this.inFlight = false;
    const p = this.pending;
    if (!p) return 0;
    let dropped = 0;
    if (ok) this.pending = null;
    else if (p.tries + 1 >= EXPORT_RETRIES) {
      dropped = p.spans.length;
      this.dropped += dropped;
      this.pending = null;
    } else {
      p.tries += 1;
      p.at = now + this.retryMs * 2 ** p.tries;
    }
    // The row exists once a try failed; it holds what is left to try, and the drops until the end.
    if (this.pending || (this.stored && this.dropped > 0 && !ended)) {
      this.row.put(JSON.stringify({ pending: this.pending, dropped: this.dropped } satisfies TraceRow));
      this.stored = true;
    } else if (this.stored) {
      this.row.delete();
      this.stored = false;
    }
    return dropped;
  }

  /** The run's storage was cleared. */
  forget(): void {
    this.buffer = [];
    this.atEnd = null;
    this.stored = false;
    this.handed.clear();
    this.pending = null;
    this.inFlight = false;
    this.dropped = 0;
  }
}

/** Where a record sits: its graph node, and the item index when it is one item of a fan-out. */
function nodeOf(
  path: string,
  nodes: ReadonlyMap<string, GraphNode>,
): { node: GraphNode; item: number | null } | null {
  const direct = nodes.get(path);
  if (direct) return { node: direct, item: null };
  // An item (`fan/3`), or a step inside an item of a fan-out workflow step (`fan/3/child`).
  const parts = path.split("/");
  const last = parts[parts.length - 1] ?? "";
  if (/^\d+$/.test(last)) {
    const step = nodes.get(
      parts
        .slice(0, -1)
        .join("/")
        .replace(/\/\d+(?=\/|$)/g, ""),
    );
    return step ? { node: step, item: Number(last) } : null;
  }
  const bare = nodes.get(path.replace(/\/\d+(?=\/|$)/g, ""));
  return bare ? { node: bare, item: null } : null;
}

function stepSpan(
  ref: TraceRef,
  path: string,
  rec: StepRecord,
  nodes: ReadonlyMap<string, GraphNode>,
  end: number,
): Span {
  const at = nodeOf(path, nodes);
  const id = at?.node.id ?? rec.id;
  const parent = path.includes("/") ? path.slice(0, path.lastIndexOf("/")) : "";
  const span: Span = {
    traceId: ref.id,
    spanId: stepSpanId(ref.id, path),
    parentSpanId: stepSpanId(ref.id, parent),
    name: at?.item !== null && at?.item !== undefined ? `step ${id}[${at.item}]` : `step ${id}`,
    kind: SpanKind.INTERNAL,
    startMs: Date.parse(rec.started_at as string),
    endMs: end,
    attributes: {
      "workflow.step.id": id,
      "workflow.step.kind": at?.node.kind ?? "workflow",
      "workflow.step.status": rec.status,
    },
  };
  if (rec.status === "failed" || rec.status === "canceled") span.error = rec.error?.code ?? rec.status;
  const wait = at?.item === null ? at.node.wait : null;
  if (wait) {
    // A signal that came, or the wait's time that ran out (a sleep's end, a signal's timeout).
    const received = wait.signal !== null && rec.status === "complete";
    const timedOut =
      (wait.signal === null && rec.status === "complete") || rec.error?.code === "wait_timeout";
    if (received || timedOut)
      span.events = [{ name: received ? "signal.received" : "wait.timeout", timeMs: end }];
  }
  return span;
}

/** Every string a span carries, masked like everything that leaves a run. */
function maskSpan(span: Span, masker: Masker): Span {
  const attributes: SpanAttributes = {};
  for (const [k, v] of Object.entries(span.attributes))
    attributes[k] = typeof v === "string" ? masker.maskText(v) : v;
  const out: Span = { ...span, name: masker.maskText(span.name), attributes };
  if (span.error !== undefined) out.error = masker.maskText(span.error);
  return out;
}
