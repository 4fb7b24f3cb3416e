/**
 * The run lifecycle's core: the state one run's decisions are made on (its document, step
 * records, books, masker, engine and duties), its views, and the decisions every input leads to —
 * the one writer of the run's status, resuming the pipeline, waking its steps, finishing it. The
 * inputs themselves are `RunLifecycle` (lifecycle.ts); docs/architecture.md has the whole table.
 */
import type { CompiledWorkflow } from "../../bundle.ts";
import { createMasker, type Masker } from "../../engine/mask.ts";
import { RunAbort } from "../../engine/run-host.ts";
import { collectSecrets } from "../../engine/secrets.ts";
import { inFlightStarts } from "../../engine/step-records.ts";
import type { RunStatus, StepRecord } from "../../engine/types.ts";
import type { DeliveryTarget } from "../deliveries/deliveries.ts";
import type { Envelope } from "../envelope.ts";
import type { RunEvent } from "../events/events.ts";
import type { ListedScores } from "../listing/listing-layout.ts";
import { CANCELED, type CancelCode } from "../run-calls.ts";
import { flowKeys, flowOf, type RunDoc, type RunError, traceOf, workflowOf } from "../run-doc.ts";
import { isFinished, type RunStore } from "../run-store.ts";
import { traceExportOf } from "../trace/otlp.ts";
import { exportRetryMs, RunTrace } from "../trace/run-trace.ts";
import { type ApprovalRecord, publicApproval } from "../waits/approvals.ts";
import type { WaitRecord } from "../waits/waits.ts";
import { compensationPlan, newCompensation } from "./compensation-plan.ts";
import type { LifecycleOptions, RunShell } from "./lifecycle-io.ts";
import { RunBooks } from "./run-books.ts";
import { Compensator } from "./run-compensation.ts";
import { RunDuties } from "./run-duties.ts";
import { EngineDriver, type EngineEnd, type LifecycleRuntime } from "./run-engine.ts";
import { judgesDue } from "./run-judges.ts";
import { isWorking, nextWakeAt, runFacts } from "./run-plan.ts";
import { completedEventOf, envelopeOf, historyOf } from "./run-view.ts";
import { deadlineError, failureError, settleRecords } from "./settle.ts";

const NO_SHELL: RunShell = { wake: () => {}, perform: () => {} };

export abstract class RunCore {
  protected doc: RunDoc | null = null;
  protected records = new Map<string, StepRecord>();
  protected books: RunBooks;
  protected masker: Masker = createMasker([]);
  protected readonly engine = new EngineDriver();
  protected endWaiters = new Set<() => void>();
  protected readonly duties: RunDuties;
  protected cancelCode: CancelCode = "canceled";
  /** Its caller carries its listing entry if it ends before the answer (run-rpc.ts, `carried`). */
  protected answerCarries = false;
  /** The run ended before its answer, its entry carried by its caller: it arms no guard. */
  endCarried = false;
  /** The run's trace: spans built at checkpoints and at the end, exported after the answer. */
  readonly trace: RunTrace;
  /** What a run that ended failed or canceled undoes, after its answer (run-compensation.ts). */
  protected readonly compensator: Compensator;

  protected readonly store: RunStore;
  protected readonly runtime: LifecycleRuntime;
  protected readonly shell: RunShell;
  protected readonly options: LifecycleOptions;

  constructor(
    store: RunStore,
    runtime: LifecycleRuntime,
    shell: RunShell = NO_SHELL,
    options: LifecycleOptions = { heartbeatMs: null },
  ) {
    this.store = store;
    this.runtime = runtime;
    this.shell = shell;
    this.options = options;
    this.trace = new RunTrace(
      store.traceRow,
      traceExportOf(runtime.env) !== null,
      exportRetryMs(runtime.env),
    );
    this.trace.onFull(() => this.exportSpans());
    this.duties = new RunDuties(
      shell,
      () => runtime.clock.now(),
      (now) => {
        const doc = this.doc;
        return (
          doc &&
          runFacts(
            doc,
            store.isStored,
            this.nextWake(now),
            this.deliverySummary(),
            this.trace.due(now),
            this.compensator.pending && options.heartbeatMs !== null ? now + options.heartbeatMs : null,
            judgesDue(doc, this.records, options.judgeEvery === true).length > 0,
          )
        );
      },
    );
    this.books = new RunBooks({
      store,
      masker: () => this.masker,
      now: () => runtime.clock.now(),
      allowPrivate: runtime.allowPrivate,
      notifyFetch: runtime.notifyFetch,
      trace: () => (this.doc ? this.trace.rootTracer(this.doc, () => runtime.clock.now()) : undefined),
      // Before a wait: what has finished is kept (docs/operations.md, "What a run writes"), and
      // its spans go to the collector.
      waitingStarted: () => {
        this.traceSteps();
        store.checkpoint();
        this.exportSpans();
      },
      approvalRequested: (rec, created) => {
        if (created) shell.approvalEvent?.("approval.requested", publicApproval(rec));
        options.approvalRequested?.(rec, created);
        // Its notification is a delivery, made once its row is written; so is an A2A task's news.
        if (created && (rec.notify || this.doc?.a2a_push?.length)) shell.perform([{ type: "deliver" }]);
        this.duties.rearm();
      },
      approvalDecided: (rec) => {
        shell.approvalEvent?.("approval.decided", publicApproval(rec));
        // An A2A task works again: its push configs hear it.
        if (this.doc?.a2a_push?.length) shell.perform([{ type: "deliver" }]);
      },
      waitStarted: (rec) => this.waitStarted(rec),
    });
    this.compensator = new Compensator({
      doc: () => this.doc,
      records: () => this.records,
      runtime,
      masker: () => this.masker,
      save: (doc) => store.saveDoc(doc),
      event: (ev) => shell.compensationEvent?.(ev),
      tracer: (path) =>
        this.doc ? this.trace.compensationTracer(this.doc, path, () => runtime.clock.now()) : undefined,
      traced: (st) => {
        if (!this.doc) return;
        this.trace.compensation(this.doc, st);
        this.exportSpans();
      },
      ended: () => {
        shell.compensationEnded?.();
        // A failed compensation is a notification (`on: [compensation_failed]`), made now.
        if (
          this.doc?.compensation?.status === "failed" &&
          this.deliveryTargets().some((t) => t.type === "run.compensation_failed")
        )
          shell.perform([{ type: "deliver" }]);
        this.duties.compensationEnded();
      },
    });
    // The run's first write arms its wake-up in the same commit.
    store.onFirstWrite(() => this.duties.rearm());
    store.trackInFlight(() => inFlightStarts(this.records));
  }

  // ---- state -------------------------------------------------------------------------------

  /** The run's document (null: no run here). */
  get current(): RunDoc | null {
    return this.doc;
  }

  get active(): boolean {
    return this.doc !== null && !isFinished(this.doc);
  }

  get stepRecords(): ReadonlyMap<string, StepRecord> {
    return this.records;
  }

  get runMasker(): Masker {
    return this.masker;
  }

  rootWorkflow(): CompiledWorkflow {
    if (!this.doc) throw new Error("no run");
    return workflowOf(this.doc.def, this.doc.workflow_key);
  }

  // ---- views -------------------------------------------------------------------------------

  /** Resolves once the run has ended (at once if it has). */
  ended(): Promise<void> {
    return this.active ? new Promise((resolve) => this.endWaiters.add(resolve)) : Promise.resolve();
  }

  /** Every approval of the run, public shape (null: no such run). */
  approvals(): ApprovalRecord[] | null {
    return this.doc && this.books.approvals(this.doc).list().map(publicApproval);
  }

  /** The run's envelope, masked (docs/http-api.md). */
  envelope(): Envelope {
    if (!this.doc) throw new Error("no run");
    const targets = this.deliveryTargets();
    const deliveries = this.books.deliveries
      .records(targets)
      .map((r, i) => ({ id: r.id, type: (targets[i] as DeliveryTarget).type, state: r.state }));
    return envelopeOf(this.doc, this.records, this.books, this.masker, this.runtime.clock.now(), deliveries);
  }

  /** The run so far as events, for a new listener of its event stream (ends with run.completed once ended). */
  history(): RunEvent[] {
    if (!this.doc) return [];
    return historyOf(this.doc, this.records, this.books, this.masker, this.runtime.clock.now());
  }

  /** When the active run must next be woken (run-plan.ts, `nextWakeAt`); null once it has ended. */
  nextWake(now: number): number | null {
    const doc = this.doc;
    if (!doc || isFinished(doc)) return null;
    const working = () => isWorking(doc, this.rootWorkflow(), this.records);
    const due = this.books.nextDue(doc);
    const delivery =
      this.books.hasApprovals || doc.a2a_push?.length
        ? this.books.deliveries.nextAttempt(this.deliveryTargets())
        : null;
    const next = due === null ? delivery : delivery === null ? due : Math.min(due, delivery);
    return nextWakeAt(doc, next, this.options.heartbeatMs, working, now);
  }

  /** The run's deliveries so far (deliveries.ts); most runs have none, and read nothing for them. */
  protected deliveryTargets(): DeliveryTarget[] {
    const doc = this.doc;
    if (!doc) return [];
    // An A2A task's push deliveries follow from its records (its output once it is complete).
    const push = doc.a2a_push?.length
      ? { records: this.records, output: () => this.envelope().output }
      : undefined;
    return this.books.deliveryTargets(doc, this.rootWorkflow(), this.runtime.env, push);
  }

  /** Its scores as its listing entry carries them (docs/file-format.md, "Scores"); null: none. */
  listedScores(): ListedScores | null {
    const doc = this.doc;
    if (!doc) return null;
    const s: ListedScores["s"] = [];
    for (const [path, rec] of this.records)
      for (const x of rec.scores ?? [])
        if (x.value !== null) s.push([path, x.name, x.value, rec.variant ?? null]);
    for (const x of doc.judged?.scores ?? [])
      if (x.value !== null) s.push([x.step, x.name, x.value, this.records.get(x.step)?.variant ?? null]);
    return s.length > 0 ? { v: this.rootWorkflow().version, s } : null;
  }

  /** How many deliveries the run has and how many failed (null: none). */
  deliverySummary(): { total: number; failed: number } | null {
    const targets = this.deliveryTargets();
    return targets.length === 0 ? null : this.books.deliveries.summary(targets);
  }

  // ---- decisions ---------------------------------------------------------------------------

  // ---- the trace ---------------------------------------------------------------------------

  /**
   * The spans of the steps finished so far join the trace's buffer; the document, which says up
   * to when, is written with the next checkpoint (after an eviction they are not sent again).
   */
  protected traceSteps(): void {
    const doc = this.doc;
    if (
      doc &&
      this.trace.exporting &&
      this.trace.steps(doc, this.rootWorkflow(), this.records, this.runtime.clock.now()) > 0
    )
      this.store.docChanged();
  }

  /** Spans waiting (or a retry due) go out after the answer. */
  protected exportSpans(): void {
    if (this.trace.due(this.runtime.clock.now())) this.shell.perform([{ type: "export" }]);
  }

  /** The one writer of the run's status while it is active; a listing that showed it queued or pending hears. */
  protected setStatus(status: RunStatus): void {
    const doc = this.doc;
    if (!doc || doc.status === status) return;
    doc.status = status;
    this.duties.statusChanged();
  }

  protected waitStarted(rec: WaitRecord): void {
    // A keyed wait registers with its key's object, which may hand it a signal kept there.
    if (rec.kind === "signal" && rec.key !== null && rec.name !== null && rec.status === "waiting")
      this.shell.perform([{ type: "register_wait", name: rec.name, key: rec.key }]);
    // An A2A task that waits for a signal needs input: its push configs hear it.
    if (rec.kind === "signal" && rec.status === "waiting" && this.doc?.a2a_push?.length)
      this.shell.perform([{ type: "deliver" }]);
    this.duties.rearm();
  }

  /** Deadline, approval timeouts, waits that ended, a resumed run. */
  protected wakeSteps(now: number): void {
    const doc = this.doc;
    if (!doc || isFinished(doc) || doc.status === "queued") return;
    if (now >= Date.parse(doc.deadline)) {
      this.engine.abort(new RunAbort("timeout"), (e) => this.engineEnded(e));
      return;
    }
    if (this.books.hasApprovals) this.books.approvals(doc).expire(now);
    this.books.waits().expire();
    this.resume();
  }

  // ---- the engine --------------------------------------------------------------------------

  /** Runs (or, after an eviction, resumes) the pipeline unless it is already running. */
  protected resume(): void {
    const doc = this.doc;
    if (!doc || isFinished(doc) || doc.status === "queued" || this.engine.running) return;
    // The deadline is enforced by wake-ups alone (the object's alarm, or its timer before the
    // first write): an in-memory timer here would keep an idle object from being evicted.
    if (this.records.size > 0 && this.runtime.clock.now() < Date.parse(doc.deadline))
      this.setStatus("running");
    const { store, shell } = this;
    this.engine.start(
      {
        doc,
        wf: this.rootWorkflow(),
        records: this.records,
        store,
        books: this.books,
        masker: this.masker,
        runtime: this.runtime,
        approvals: this.options.approvals,
        trace: { ref: traceOf(doc), sink: this.trace.sink },
      },
      {
        running: () => {
          if (doc.status === "pending") this.setStatus("running");
        },
        stepChanged: (path, rec) => shell.stepChanged?.(path, rec),
        ...(shell.output
          ? { output: (path: string, text: string | null) => shell.output?.(path, text) }
          : {}),
        stepFinished: (path, rec, effect) => {
          if (isFinished(doc)) return;
          store.stepFinished(path, rec, effect);
          shell.stepChanged?.(path, rec);
        },
        ended: (end) => this.engineEnded(end),
      },
    );
  }

  /** The pipeline ended, or the run was stopped (deadline, cancel) whatever its steps are doing. */
  protected engineEnded(end: EngineEnd): void {
    if (end.how === "complete") this.finish("complete", null);
    else if (end.how === "failed") this.finish("failed", failureError(end.error, this.masker));
    else if (end.how === "canceled")
      this.finish(
        "canceled",
        { code: this.cancelCode, message: CANCELED[this.cancelCode], step: null },
        "run_canceled",
      );
    else this.finish("failed", deadlineError(this.rootWorkflow(), this.records));
  }

  protected finish(
    status: "complete" | "failed" | "canceled",
    error: RunError | null,
    skipReason = "run_failed",
  ): void {
    const doc = this.doc;
    if (!doc || isFinished(doc)) return;
    const now = this.runtime.clock.now();
    // Whatever did not finish is settled here, so the stored envelope is final.
    const finalRecords = settleRecords(
      doc.def,
      this.rootWorkflow(),
      this.records,
      now,
      skipReason,
      this.masker,
    );
    doc.status = status;
    doc.error = error;
    doc.finished_at = new Date(now).toISOString();
    // Late results of aborted steps must not change the final record.
    this.records = finalRecords;
    // Its spans: the steps not handed over yet, then the run's own, built when the export takes
    // them (after the answer).
    const wf = this.rootWorkflow();
    this.trace.ended(() => {
      this.trace.steps(doc, wf, finalRecords, now);
      this.trace.root(doc, wf);
    });
    // A failed or canceled run undoes what its completed steps did (docs/file-format.md,
    // "Compensation"): the plan is set in the run's last write, and runs after the answer.
    if (status !== "complete") {
      const root = this.rootWorkflow();
      doc.compensation = newCompensation(
        compensationPlan(doc.def, root, finalRecords, {
          params: doc.params,
          request: doc.request ?? { headers: {} },
          env: {},
        }),
      );
    }
    // Owes nothing after its answer but its listing entry (no compensation, delivery, slot, judge).
    const owesOnlyItsEntry =
      !doc.compensation &&
      this.deliveryTargets().length === 0 &&
      flowKeys(flowOf(doc)).length === 0 &&
      judgesDue(doc, finalRecords, this.options.judgeEvery === true).length === 0;
    // An express run (`history: failures`) that completed before anything of it was written, and
    // owes nothing else, keeps no record of its own.
    const express =
      status === "complete" &&
      this.rootWorkflow().history === "failures" &&
      !this.store.isStored &&
      owesOnlyItsEntry;
    if (express) doc.kept = false;
    // Any other run that ended before its answer and owes nothing else: the caller that answers it
    // carries its entry, so its object arms no guard (docs/decisions.md, "A default run at the floor").
    this.endCarried = !express && this.answerCarries && owesOnlyItsEntry;
    // Steps settled here (canceled, skipped) are news to listeners.
    for (const path of express ? [] : this.store.runFinished(doc, finalRecords)) {
      const rec = finalRecords.get(path);
      if (rec) this.shell.stepChanged?.(path, rec);
    }
    // Nobody will decide for a run that has ended.
    if (this.books.hasApprovals) {
      const book = this.books.approvals(doc);
      for (const a of book.pending()) book.decide(a.id, "timeout", null);
    }
    this.engine.stop();
    this.shell.ended?.(() => completedEventOf(this.envelope(), now), this.compensator.pending);
    // What the run owes after its answer, guarded by one alarm that rides in its last write's commit.
    this.duties.ended(now, !express && !this.endCarried);
    for (const w of this.endWaiters) w();
    this.endWaiters.clear();
    this.compensator.start();
  }

  /** Resolves once the compensation phase has stopped running in this incarnation (the workflow-test runner). */
  compensationSettled(): Promise<void> {
    return this.compensator.settled();
  }

  /** Whether the run's compensation phase has compensations still to run. */
  get compensating(): boolean {
    return this.compensator.pending;
  }

  protected makeMasker(doc: RunDoc): Masker {
    return createMasker(
      collectSecrets(doc.def, workflowOf(doc.def, doc.workflow_key), this.runtime.env).values,
    );
  }
}
