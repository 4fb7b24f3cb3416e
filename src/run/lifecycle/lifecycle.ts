/**
 * The run lifecycle: the one place that decides what happens to a run. It takes inputs — start
 * (with its admission verdict already made), the answer about to leave, a wake-up at time t, a
 * queued run's turn, a signal, a decision, a cancel, and the results of what it asked the shell
 * to do — and decides: the run's own storage through the `RunStore` port (what is written when:
 * run-store.ts), and for everything else effects and the next wake-up through the `RunShell`
 * (what to perform: run-plan.ts). It uses no Worker API: the Durable Object (run-object.ts)
 * performs what it decides; the workflow-test runner (src/testing/run-case.ts) drives the same
 * lifecycle in memory on a virtual clock. Step statuses are written by src/engine/step-status.ts
 * alone; the run's status by `setStatus` (lifecycle-core.ts) alone. The state and the decisions
 * every input leads to are `RunCore` (lifecycle-core.ts); this class is the inputs.
 */
import type { Json, JsonObject } from "../../bundle.ts";
import { RunAbort } from "../../engine/run-host.ts";
import { restoreInFlight } from "../../engine/step-records.ts";
import type { Span } from "../../engine/trace.ts";
import { MAX_PUSH_CONFIGS } from "../deliveries/a2a-push.ts";
import type { PublicDelivery } from "../deliveries/deliveries.ts";
import type { BeginPayload } from "../keys/flow-key-rpc.ts";
import type { AdmitVerdict, TurnVerdict } from "../keys/flow-key-types.ts";
import { searchValues } from "../keys/invoke-keys.ts";
import { listKey } from "../listing/listing-layout.ts";
import type {
  CancelCode,
  CancelResult,
  CompensateResult,
  PushOp,
  PushOutcome,
  SignalResult,
} from "../run-calls.ts";
import {
  flowKeys,
  flowOf,
  newRunDoc,
  noteRerun,
  type RunDoc,
  type StartRun,
  workflowOf,
} from "../run-doc.ts";
import { declaredSignals } from "../run-graph.ts";
import { isFinished } from "../run-store.ts";
import type { DecideResult } from "../waits/approvals.ts";
import { RunCore } from "./lifecycle-core.ts";
import { answerOf, askAt, passGate, rekeyAfterGroup } from "./run-flow.ts";
import { judgesDue, runJudges } from "./run-judges.ts";
import { type EffectResult, expiresAt, type RunEffect } from "./run-plan.ts";

export class RunLifecycle extends RunCore {
  // ---- inputs ------------------------------------------------------------------------------

  /** Loads the run kept in storage (if any) and resumes it if it was active. */
  load(): void {
    this.trace.load();
    const stored = this.store.load();
    if (!stored) return;
    this.doc = stored.doc;
    this.records = stored.records;
    restoreInFlight(this.records, stored.started);
    this.books.restore(stored);
    this.masker = this.makeMasker(stored.doc);
    if (!isFinished(stored.doc)) this.resume();
    // Killed or evicted mid-compensation: what was not written as done is sent again (same key).
    else this.compensator.start();
  }

  /**
   * Starts a new run, pinned to its own slice of `req.bundle`, as admission decided (queued or
   * not). `carries`: its caller waits for the answer and carries the listing entry of a run that
   * ends before it.
   */
  start(req: StartRun, carries = false): void {
    this.answerCarries = carries;
    const doc = newRunDoc(req, this.runtime.clock.now());
    this.masker = this.makeMasker(doc);
    doc.params = this.masker.maskJson(doc.params);
    doc.request = this.masker.maskJson(req.request);
    const masker = this.masker;
    const search = searchValues(workflowOf(doc.def, doc.workflow_key).search, req, (t) => masker.maskText(t));
    if (search) doc.search = search;
    this.doc = doc;
    this.store.runStarted(doc);
    if (req.rerun?.arms && Object.keys(req.rerun.arms).length > 0) doc.arms = req.rerun.arms;
    if (req.rerun) {
      // Reused records are finished: the engine does not run their steps again.
      this.records = new Map(req.rerun.reused);
      this.store.reuse(req.rerun.reused);
    }
    // A re-run was promised to the run it re-runs, and a run that waits or holds something in a
    // flow key (a slot, a place, a watch) must give it back: both are written now, so the promise
    // and the place are never orphaned. Any other run (one that only passed a throttle, too) is
    // written when something must outlive this incarnation (run-store.ts).
    if (req.rerun || (req.flow && (doc.status === "queued" || flowKeys(req.flow).length > 0)))
      this.store.persist();
    // Passed its first key and waits at the next: it asks there at once.
    const ask =
      doc.status === "queued" && req.flow && !req.flow.admitted
        ? askAt(req.flow, doc.params as JsonObject)
        : null;
    if (ask) this.shell.perform([ask]);
    this.resume();
    // A run not written yet is woken by a timer (a written one armed its alarm with its first write).
    if (!this.store.isStored) this.duties.rearm();
  }

  /**
   * The shell is about to answer a caller. A run still active is written first (the object's
   * output gate holds the answer until the write lands): whoever was told it exists can find it
   * after an eviction, and its deadline holds.
   */
  answering(): void {
    if (!this.active) return;
    this.store.persist();
    // The answer leaves before the end: the run guards its own entry.
    this.answerCarries = false;
  }

  /**
   * A wake-up fired at `now` (the alarm, or before the first write the timer): a run not written
   * yet is written; the deadline ends the run; approvals and waits whose time passed are settled;
   * a run evicted mid-step resumes. A queued run asks its key again, and an active run is listed
   * by now; a finished run does what it still owes, or goes once its retention has passed.
   */
  alarm(now: number): void {
    this.duties.fired();
    const doc = this.doc;
    if (!doc) {
      // An express run keeps no record, only the spans its collector did not take yet.
      if (this.trace.due(now)) this.shell.perform([{ type: "export" }]);
      return;
    }
    if (isFinished(doc)) {
      if (this.expired(now)) this.shell.perform([{ type: "delete" }]);
      else {
        this.compensator.start();
        this.duties.owe(false);
      }
      return;
    }
    this.store.persist();
    const effects: RunEffect[] = [];
    const flow = doc.status === "queued" ? flowOf(doc) : null;
    const ask = flow && askAt(flow, doc.params as JsonObject);
    if (ask) effects.push(ask);
    this.wakeSteps(now);
    if (!this.active) return; // the deadline ended it: finish() set what comes next
    if (!this.duties.listedAs(listKey(doc.status, null))) effects.push({ type: "list" });
    if (this.trace.due(now)) effects.push({ type: "export" });
    // An approval request's delivery whose attempt is due.
    if (
      (this.books.hasApprovals || doc.a2a_push?.length) &&
      (this.books.deliveries.nextAttempt(this.deliveryTargets()) ?? now + 1) <= now
    )
      effects.push({ type: "deliver" });
    // Each effect's result arms the next wake-up; without any, it is armed now.
    if (effects.length > 0) this.shell.perform(effects);
    else this.duties.rearm();
  }

  /**
   * A flow key said go (`payload.gate`; a debounce's or batch's params and size with it): the run
   * passes it and asks its next key, or, having passed them all, starts now, its timeout counted
   * from now. False: it cannot (it has ended).
   */
  begin(payload: BeginPayload | null = null): boolean {
    const doc = this.doc;
    if (!doc || isFinished(doc)) return false;
    if (doc.status !== "queued") return true;
    const flow = flowOf(doc);
    const step = flow ? passGate(flow, payload?.gate) : "start";
    if (step === "stale") return true;
    if (payload?.params) {
      doc.params = this.masker.maskJson(payload.params);
      if (flow)
        rekeyAfterGroup(flow, this.rootWorkflow(), {
          params: payload.params,
          request: doc.request as JsonObject,
        });
    }
    if (payload?.coalesced) doc.coalesced = payload.coalesced;
    if (step === "next" && flow) {
      this.store.saveDoc(doc);
      const ask = askAt(flow, doc.params as JsonObject);
      if (ask) this.shell.perform([ask]);
      return true;
    }
    const now = this.runtime.clock.now();
    doc.deadline = new Date(now + this.rootWorkflow().policy.timeoutS * 1000).toISOString();
    this.setStatus("pending");
    this.store.saveDoc(doc);
    this.resume();
    this.duties.rearm();
    return true;
  }

  /** Notes a re-run of this finished run (a bulk re-run takes each run once). */
  rerunStarted(runId: string, once: boolean): "claimed" | "already" | "not_found" | "active" {
    const outcome = this.doc ? noteRerun(this.doc, runId, once) : "not_found";
    if (outcome === "claimed") this.store.saveDoc(this.doc as RunDoc);
    return outcome;
  }

  /**
   * An A2A task's push configs (docs/a2a.md): at most MAX_PUSH_CONFIGS, kept in the run's document
   * (one write when one is made or deleted; none for a run without any). A new config hears the
   * state the task is in at once.
   */
  pushConfigs(op: PushOp): PushOutcome {
    const doc = this.doc;
    if (!doc) return { outcome: "not_found" };
    const configs = doc.a2a_push ?? [];
    if (op.op === "list") return { outcome: "ok", configs };
    if (op.op !== "create") {
      const found = configs.find((c) => c.id === op.id);
      if (op.op === "get")
        return found ? { outcome: "ok", configs: [found] } : { outcome: "config_not_found" };
      if (!found) return { outcome: "ok", configs: [] };
      doc.a2a_push = configs.filter((c) => c.id !== op.id);
      this.store.saveDoc(doc);
      return { outcome: "ok", configs: [] };
    }
    if (isFinished(doc)) return { outcome: "not_active" };
    const others = configs.filter((c) => c.id !== op.config.id);
    if (others.length >= MAX_PUSH_CONFIGS) return { outcome: "too_many" };
    doc.a2a_push = [...others, op.config];
    this.store.saveDoc(doc);
    this.shell.perform([{ type: "deliver" }]);
    return { outcome: "ok", configs: [op.config] };
  }

  /** Cancels the run (`code`: `canceled` by a caller, `replaced` by a newer run of its key, `canceled_by_signal`). */
  cancel(code: CancelCode = "canceled"): CancelResult {
    if (!this.doc) return { outcome: "not_found" };
    if (isFinished(this.doc)) return { outcome: "not_active" };
    this.cancelCode = code;
    this.engine.abort(new RunAbort("canceled"), (e) => this.engineEnded(e));
    return { outcome: "canceled", envelope: this.envelope() };
  }

  /**
   * `POST /runs/{id}/compensate`: every failed compensation of the finished run is tried once
   * more (docs/http-api.md); a call while they are being tried finds none failed.
   */
  compensate(): CompensateResult {
    const doc = this.doc;
    if (!doc) return { outcome: "not_found" };
    if (!isFinished(doc)) return { outcome: "active" };
    const retried = this.compensator.retryFailed();
    if (retried === 0) return { outcome: "nothing" };
    this.duties.owe(false);
    return { outcome: "retried", retried };
  }

  /** Decides one approval by id, or (ktsu's form) the oldest pending approval of a step. */
  decide(
    target: { id: string } | { step: string },
    decision: "approved" | "rejected" | "timeout",
    comment: string | null,
  ): DecideResult {
    if (!this.doc) return { outcome: "not_found" };
    const result = this.books.decide(this.doc, target, decision, comment);
    if (result.outcome === "decided" && this.active) {
      // Evicted while waiting: the step resumes, asks again with the same key and finds the decision.
      this.resume();
      this.duties.rearm();
    }
    return result;
  }

  /**
   * A signal for the run: delivered to its wait for `name` (with `key`: only a wait with that key)
   * that is waiting now, or (without a key) kept until the run reaches such a wait.
   */
  signal(name: string, body: Json, key: string | null = null): SignalResult {
    const doc = this.doc;
    if (!doc) return { outcome: "not_found" };
    // A name no wait of the run declares is a typo: never kept, whatever the run's state.
    if (!declaredSignals(doc.def).has(name)) return { outcome: "unknown" };
    if (isFinished(doc)) return { outcome: "not_active" };
    const { result, resume } = this.books.signal(name, body, key);
    if (result.outcome === "delivered") {
      // Evicted while waiting: the step resumes, asks again and finds the signal.
      if (resume) this.resume();
      this.duties.rearm();
    }
    return result;
  }

  /**
   * An effect reported back: a queued run's turn (it starts, or waits on), the listing's, the
   * key's or the notifications' result (an active run re-arms; a finished one, once everything it
   * owed has reported, arms its last wake-up or none).
   */
  reported(result: EffectResult): void {
    if (!this.doc) {
      // An express run that keeps nothing but a batch of spans to try again.
      if (result.type === "export")
        this.duties.arm(result.next === null ? null : { at: result.next, durable: true });
      return;
    }
    // A run that keeps no record has nothing to send again: shown by its shard is all it can do.
    const r: EffectResult =
      result.type === "list" && this.doc.kept === false ? { ...result, durableAt: null } : result;
    if (r.type === "ask_turn") this.keyAnswered(r.gate, r.verdict);
    else this.duties.reported(r);
  }

  // ---- the trace ---------------------------------------------------------------------------

  /** The batch of spans to send now, masked (null: none is due); the shell reports with `exported`. */
  spansToExport(): Span[] | null {
    return this.trace.take(this.runtime.clock.now(), this.masker);
  }

  /**
   * How the batch went: a failure is tried again from the alarm, the last failure drops it.
   * Returns how many spans were dropped, and whether the run has ended (its log line is out).
   */
  exported(ok: boolean): { dropped: number; ended: boolean } {
    const now = this.runtime.clock.now();
    const ended = this.doc === null || isFinished(this.doc);
    const dropped = this.trace.sent(ok, now, ended);
    this.reported({ type: "export", next: this.trace.next });
    // More spans waited meanwhile (or a retry is due at once): they go now.
    if (this.trace.due(now)) this.shell.perform([{ type: "export" }]);
    return { dropped, ended };
  }

  // ---- judges ------------------------------------------------------------------------------

  /**
   * The run's judges, after its answer (the shell's `judge` effect; run-judges.ts): what they said
   * and cost is kept in one write of the document, and its listing entry hears the scores.
   */
  async judge(): Promise<void> {
    const doc = this.doc;
    const every = this.options.judgeEvery === true;
    if (!doc || judgesDue(doc, this.records, every).length === 0) {
      this.reported({ type: "judge", done: true });
      return;
    }
    let done = false;
    try {
      const judged = await runJudges(doc, this.records, this.runtime, this.masker, every);
      doc.judged = { ...judged, done: true };
      this.store.saveDoc(doc);
      done = true;
    } finally {
      this.reported({ type: "judge", done });
      if (done) this.duties.relist();
    }
  }

  // ---- deliveries --------------------------------------------------------------------------

  /** Makes the delivery attempts due now (the shell's `deliver` effect), then reports when the next is due. */
  async deliver(): Promise<void> {
    const targets = this.deliveryTargets();
    if (targets.length > 0) await this.books.deliveries.pass(targets);
    // The attempts' spans go to the collector (also after the run ended).
    this.exportSpans();
    if (this.doc)
      this.reported({ type: "deliver", next: this.books.deliveries.nextAttempt(this.deliveryTargets()) });
  }

  /** The run's deliveries, as the API shows them (null: no run). */
  deliveries(): PublicDelivery[] | null {
    const doc = this.doc;
    if (!doc) return null;
    return this.books.deliveries.list(this.deliveryTargets(), doc, this.rootWorkflow().name, this.masker);
  }

  /** One attempt more of delivery `id`, now; null: the run has no such delivery. */
  retryDelivery(id: string): PublicDelivery | null {
    const granted = this.doc ? this.books.deliveries.grant(id, this.deliveryTargets()) : null;
    if (!granted) return null;
    this.shell.perform([{ type: "deliver" }]);
    return this.deliveries()?.find((d) => d.id === id) ?? null;
  }

  /** Every failed delivery created at or after `since` is attempted once more; how many. */
  recoverDeliveries(since: number): number {
    const n = this.doc ? this.books.deliveries.recover(since, this.deliveryTargets()) : 0;
    if (n > 0) this.shell.perform([{ type: "deliver" }]);
    return n;
  }

  // ---- retention ---------------------------------------------------------------------------

  /** Whether the run has finished and passed its retention (gone for every reader); a pending delivery keeps it. */
  expired(now: number): boolean {
    const at = this.doc && expiresAt(this.doc, this.options.retentionMs ?? null);
    return at != null && now >= at && this.books.deliveries.nextAttempt(this.deliveryTargets()) === null;
  }

  /**
   * The run's listing shard asks it to go once its hour has passed retention: a finished run past
   * its own retention goes ("delete": the shell clears storage, then `forget`); one whose
   * retention was raised since is kept, with a wake-up at its own end.
   */
  expire(now: number): "delete" | "kept" | "gone" {
    if (!this.doc) return "gone";
    const at = expiresAt(this.doc, this.options.retentionMs ?? null);
    // A delivery still pending keeps its run (and its row) until it is delivered or has failed.
    const pending = this.books.deliveries.nextAttempt(this.deliveryTargets());
    if (at !== null && now >= at && pending === null) return "delete";
    if (at !== null) this.duties.arm({ at: Math.max(at, pending ?? at), durable: true });
    return "kept";
  }

  /** The listing asks the run to report itself again (its legacy index moving into shards). */
  relist(): void {
    if (this.doc) this.duties.relist();
  }

  /** After the run's storage was cleared (deleted): nothing of it remains in memory either. */
  forget(): void {
    this.compensator.stop();
    this.doc = null;
    this.books.forget();
    this.records = new Map();
    this.engine.stop();
    this.duties.reset();
    this.trace.forget();
    this.store.forget();
  }

  /** The key a queued run waits at answered `ask_turn`: go on, wait (noting why), or refused. */
  private keyAnswered(gate: string, verdict: AdmitVerdict | TurnVerdict): void {
    const doc = this.doc;
    const flow = doc && doc.status === "queued" ? flowOf(doc) : null;
    if (!doc || !flow || flow.gates[flow.at]?.name !== gate) return;
    const answer = answerOf(flow, verdict);
    if ("go" in answer && answer.go) {
      this.begin({ gate, params: answer.params, coalesced: answer.coalesced });
      return;
    }
    // Its next key has no slot and does not queue (on_full: skip): it cannot start.
    if ("refused" in answer && answer.refused === "skipped") {
      this.cancel("replaced");
      return;
    }
    if ("changed" in answer && answer.changed) this.store.saveDoc(doc);
    this.duties.rearm();
  }
}
