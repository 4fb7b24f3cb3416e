/**
 * The run lifecycle: every transition of one run and of its steps — start, resume after an
 * eviction, wake-ups (deadline, approval timeouts), approvals asked and decided, cancel, finish —
 * in one place, over two ports: a `RunStore` (what is kept, and when it is written) and the
 * `LifecycleRuntime` (executors, fetch, the clock). It uses no Worker API: the Durable Object
 * (run-object.ts) is a shell that gives it SQLite-backed storage, an alarm and RPC; the
 * workflow-test runner (src/testing/run-case.ts) drives the same lifecycle in memory on a
 * virtual clock. Step statuses are set by the engine (src/engine/scheduler.ts) alone; the
 * lifecycle decides how a run starts and ends.
 */
import type { Bundle, CompiledAuth, CompiledWorkflow, Json, JsonObject } from "../bundle.ts";
import { createLedger, type LedgerState } from "../engine/budget.ts";
import type { Clock } from "../engine/clock.ts";
import { createMasker, type Masker } from "../engine/mask.ts";
import { ancestorPaths, type Executors, RunAbort, type RunHost, runPipeline } from "../engine/scheduler.ts";
import { collectSecrets, declaredEnv, stringEnv } from "../engine/secrets.ts";
import type { ApprovalHost, RunStatus, StepContext, StepRecord, ToolHost } from "../engine/types.ts";
import { ApprovalBook, type ApprovalRecord, type DecideResult, publicApproval } from "./approvals.ts";
import {
  buildEnvelope,
  type Envelope,
  forEachRecordPath,
  type GraphNode,
  pinDefinition,
  type RunDoc,
  type RunError,
  runGraph,
} from "./envelope.ts";
import { type RunEvent, replayEvents } from "./events.ts";
import { isFinished, type RunStore } from "./run-store.ts";
import { deadlineError, failureError, settleRecords } from "./settle.ts";
import { type DeliverResult, WaitBook, type WaitRecord } from "./waits.ts";

/** Step statuses after which the engine no longer writes to the record. */
const SETTLED = new Set(["complete", "failed", "skipped", "canceled"]);

/** What the run's steps are given to reach the world: the Worker's, or a test case's mocks. */
export interface LifecycleRuntime {
  /** The environment (Worker bindings and vars, or a test case's env): secrets, declared env, keys. */
  env: Record<string, unknown>;
  executors: Executors;
  /** Outbound requests of steps (already limited to the run's outbound limit). */
  fetch: StepContext["fetch"];
  tools?: ToolHost;
  ai?: RunHost["ai"];
  clock: Clock;
  outboundLimit: number;
  /** Private and loopback hosts may be called (tests, local development). */
  allowPrivate: boolean;
  /** How approval notifications are sent (never called in workflow tests). */
  notifyFetch: (input: string | Request, init?: RequestInit) => Promise<Response>;
}

/** What the shell around the lifecycle is told (each optional: the test runner needs few). */
export interface LifecycleHooks {
  /** Something changed when the run must next be woken (see `nextWake`). */
  rearm?(): void;
  /** A step's record changed in a way a live listener sees (started, waiting, finished, settled). */
  stepChanged?(path: string, rec: StepRecord): void;
  approvalEvent?(type: "approval.requested" | "approval.decided", approval: ApprovalRecord): void;
  /** The run's status changed while it is active (pending → running). */
  statusChanged?(status: RunStatus): void;
  /** The run ended; its document and records are final and stored. */
  finished?(doc: RunDoc, records: ReadonlyMap<string, StepRecord>): void;
}

export interface LifecycleOptions {
  /** While a step works, wake at least this often to resume after an eviction (null: never evicted). */
  heartbeatMs: number | null;
  /** Wraps a step's approvals host (the test runner decides approvals from the case). */
  approvals?(path: string, inner: ApprovalHost): ApprovalHost;
  /** An approval started waiting (`created`: it is new). */
  approvalRequested?(rec: ApprovalRecord, created: boolean): void;
  /** A wait step started waiting (a keyed wait registers with its key's object). */
  waitStarted?(rec: WaitRecord): void;
}

export type SignalResult =
  | DeliverResult
  | { outcome: "kept" | "pending" | "not_waiting" | "not_found" | "not_active" };

export interface StartRun {
  runId: string;
  /** The deployed bundle; the run pins its own slice of it. */
  bundle: Bundle;
  workflowKey: string;
  params: JsonObject;
  request: JsonObject;
  bodyHash: string | null;
  idempotencyKey: string | null;
  origin: string | null;
  /** A re-run (SPEC 12): the run it re-runs, and the records it reuses from it (see rerun.ts). */
  rerun?: { of: string; reused: Array<[string, StepRecord]> } | null;
  /** `invoke.concurrency`: the run's key; `queued` when it must wait for a slot (SPEC 13). */
  concurrency?: { gate: string; limit: number; queued: boolean } | null;
}

export type CancelResult =
  | { outcome: "canceled"; envelope: Envelope }
  | { outcome: "not_active" }
  | { outcome: "not_found" };

export interface RunView {
  auth: CompiledAuth | null;
  envelope: Envelope;
  graph: GraphNode[];
}

export class RunLifecycle {
  private doc: RunDoc | null = null;
  private records = new Map<string, StepRecord>();
  private approvalRows = new Map<string, ApprovalRecord>();
  private waitRows = new Map<string, WaitRecord>();
  private keptSignals = new Map<string, Json>();
  private waitBookCache: WaitBook | null = null;
  private book: ApprovalBook | null = null;
  private masker: Masker = createMasker([]);
  private controller: AbortController | null = null;
  private engine: Promise<void> | null = null;
  private endWaiters = new Set<() => void>();

  private readonly store: RunStore;
  private readonly runtime: LifecycleRuntime;
  private readonly hooks: LifecycleHooks;
  private readonly options: LifecycleOptions;

  constructor(
    store: RunStore,
    runtime: LifecycleRuntime,
    hooks: LifecycleHooks = {},
    options: LifecycleOptions = { heartbeatMs: null },
  ) {
    this.store = store;
    this.runtime = runtime;
    this.hooks = hooks;
    this.options = options;
  }

  /** Loads the run kept in storage (if any) and resumes it if it was active. */
  load(): void {
    const stored = this.store.load();
    if (!stored) return;
    this.doc = stored.doc;
    this.records = stored.records;
    for (const a of stored.approvals) this.approvalRows.set(a.id, a);
    for (const w of stored.waits) this.waitRows.set(w.path, w);
    this.keptSignals = stored.kept;
    this.masker = this.makeMasker(stored.doc);
    if (!isFinished(stored.doc)) this.resume();
  }

  /**
   * The run is written now if it has not been (the object is about to answer while the run is
   * still active, or the run has been active for a while and the listing must see it).
   */
  persist(): void {
    if (this.active) this.store.persist();
  }

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

  /** Starts a new run, pinned to its own slice of `req.bundle`. */
  start(req: StartRun): void {
    const def = pinDefinition(req.bundle, req.workflowKey);
    const wf = workflowOf(def, req.workflowKey);
    const now = this.runtime.clock.now();
    const doc: RunDoc = {
      run_id: req.runId,
      workflow_key: req.workflowKey,
      status: "pending",
      error: null,
      params: req.params,
      request: req.request,
      created_at: new Date(now).toISOString(),
      deadline: new Date(now + wf.policy.timeoutS * 1000).toISOString(),
      finished_at: null,
      body_hash: req.bodyHash,
      idempotency_key: req.idempotencyKey,
      def,
      ledger: { spent: 0, outstanding: {} },
      origin: req.origin,
    };
    if (req.rerun) doc.rerun_of = req.rerun.of;
    if (req.concurrency) {
      doc.concurrency = { gate: req.concurrency.gate, limit: req.concurrency.limit };
      // A queued run has not started: its deadline is set when it begins.
      if (req.concurrency.queued) doc.status = "queued";
    }
    this.masker = this.makeMasker(doc);
    doc.params = this.masker.maskJson(doc.params);
    doc.request = this.masker.maskJson(req.request);
    this.doc = doc;
    this.store.runStarted(doc);
    if (req.rerun) {
      // Reused records are finished: the engine does not run their steps again.
      this.records = new Map(req.rerun.reused);
      this.store.reuse(req.rerun.reused);
    }
    // A re-run was promised to the run it re-runs, and a run with a concurrency key holds a place
    // in its key's object: both are written now, so the promise and the place are never orphaned.
    // Any other run is written when something must outlive this incarnation (run-store.ts).
    if (req.rerun || req.concurrency) this.store.persist();
    this.resume();
  }

  /** A queued run's slot came free: it starts now, its timeout counted from now. False: it cannot (ended). */
  begin(): boolean {
    const doc = this.doc;
    if (!doc || isFinished(doc)) return false;
    if (doc.status !== "queued") return true;
    const now = this.runtime.clock.now();
    doc.status = "pending";
    doc.deadline = new Date(now + this.rootWorkflow().policy.timeoutS * 1000).toISOString();
    this.store.saveDoc(doc);
    this.hooks.statusChanged?.("pending");
    this.resume();
    this.hooks.rearm?.();
    return true;
  }

  /** Notes a re-run of this finished run (a bulk re-run takes each run once). */
  rerunStarted(runId: string, once: boolean): "claimed" | "already" | "not_found" | "active" {
    const doc = this.doc;
    if (!doc) return "not_found";
    if (!isFinished(doc)) return "active";
    if (once && (doc.reruns?.length ?? 0) > 0) return "already";
    // The latest few are enough to know it was re-run (and to follow it up by hand).
    doc.reruns = [...(doc.reruns ?? []), runId].slice(-20);
    this.store.saveDoc(doc);
    return "claimed";
  }

  /** Resolves once the run has ended (at once if it has). */
  ended(): Promise<void> {
    if (!this.active) return Promise.resolve();
    return new Promise((resolve) => this.endWaiters.add(resolve));
  }

  /** Drops a waiter of `ended()` that no longer waits (a caller that timed out). */
  stopWaiting(resolve: () => void): void {
    this.endWaiters.delete(resolve);
  }

  /**
   * A wake-up (the object's alarm, or the virtual clock): the deadline ends the run; approvals
   * whose own timeout passed are timed out; a run evicted mid-step resumes.
   */
  wake(): void {
    const doc = this.doc;
    if (!doc || isFinished(doc) || doc.status === "queued") return;
    if (this.runtime.clock.now() >= Date.parse(doc.deadline)) {
      this.abort(new RunAbort("timeout"));
      return;
    }
    this.approvalBook().expire(this.runtime.clock.now());
    const waits = this.waitBook();
    waits.expire();
    this.resume();
  }

  /**
   * When the run must next be woken: its deadline, the earliest approval timeout, and — only
   * while some step is actually working, and only where the run can be evicted — the heartbeat
   * that resumes it. A run whose steps all wait for humans sleeps until a decision (a request
   * wakes it), an approval's timeout or the deadline. Null once the run has ended.
   */
  nextWake(now: number): number | null {
    const doc = this.doc;
    if (!doc || isFinished(doc)) return null;
    // Queued: no deadline runs yet; the heartbeat asks the key's object again (self-healing).
    if (doc.status === "queued")
      return this.options.heartbeatMs === null ? null : now + this.options.heartbeatMs;
    let next = Date.parse(doc.deadline);
    const expiry = this.approvalBook().nextExpiry();
    if (expiry !== null) next = Math.min(next, expiry);
    const due = this.waitBook().nextDue();
    if (due !== null) next = Math.min(next, due);
    const beat = this.options.heartbeatMs;
    if (beat !== null && this.working()) next = Math.min(next, now + beat);
    return next;
  }

  cancel(): CancelResult {
    if (!this.doc) return { outcome: "not_found" };
    if (isFinished(this.doc)) return { outcome: "not_active" };
    this.abort(new RunAbort("canceled"));
    return { outcome: "canceled", envelope: this.envelope() };
  }

  /** Every approval of the run, public shape (null: no such run). */
  approvals(): ApprovalRecord[] | null {
    if (!this.doc) return null;
    return this.approvalBook().list().map(publicApproval);
  }

  /** Decides one approval by id, or (ktsu's form) the oldest pending approval of a step. */
  decide(
    target: { id: string } | { step: string },
    decision: "approved" | "rejected" | "timeout",
    comment: string | null,
  ): DecideResult {
    if (!this.doc) return { outcome: "not_found" };
    const book = this.approvalBook();
    let id: string;
    if ("id" in target) id = target.id;
    else {
      const mine = book.list().filter((a) => a.step === target.step);
      const open = mine.find((a) => a.status === "pending");
      const last = mine[mine.length - 1];
      if (!open)
        return last
          ? { outcome: "already_decided", approval: publicApproval(last) }
          : { outcome: "not_found" };
      id = open.id;
    }
    const result = book.decide(id, decision, comment);
    if (result.outcome === "decided" && this.active) {
      // Evicted while waiting: the step resumes, asks again with the same key and finds the decision.
      this.resume();
      this.hooks.rearm?.();
    }
    return result.outcome === "not_found" ? result : { ...result, approval: publicApproval(result.approval) };
  }

  /**
   * A signal for the run (SPEC 13): delivered to its wait for `name` (with `key`: only a wait with
   * that key) that is waiting now, or (without a key) kept until the run reaches such a wait.
   */
  signal(name: string, body: Json, key: string | null = null): SignalResult {
    const doc = this.doc;
    if (!doc) return { outcome: "not_found" };
    if (isFinished(doc)) return { outcome: "not_active" };
    const book = this.waitBook();
    const result = book.deliver(name, body, key);
    if (result.outcome === "delivered") {
      // Evicted while waiting: the step resumes, asks again and finds the signal.
      if (!book.hasListener(result.step)) this.resume();
      this.hooks.rearm?.();
      return result;
    }
    if (result.outcome === "invalid") {
      // Paths and messages quote the sender's property names, which may hold a secret value.
      const m = this.masker;
      return {
        ...result,
        errors: result.errors.map((e) => ({ path: m.maskText(e.path), message: m.maskText(e.message) })),
      };
    }
    if (key !== null) return { outcome: "not_waiting" };
    return { outcome: book.keep(name, body) };
  }

  view(): RunView | null {
    if (!this.doc) return null;
    const wf = this.rootWorkflow();
    return { auth: wf.auth, envelope: this.envelope(), graph: runGraph(this.doc.def, wf) };
  }

  /** The run's envelope, masked (SPEC 4). */
  envelope(): Envelope {
    const doc = this.doc;
    if (!doc) throw new Error("no run");
    let records: ReadonlyMap<string, StepRecord> = this.records;
    if (!isFinished(doc)) {
      // Right after a wake-up the resumed step has not asked again yet: storage says it waits.
      const waiting = new Set(
        [...this.approvalRows.values()].filter((a) => a.status === "pending").map((a) => a.step),
      );
      const waits = this.waitBook().waitingPaths();
      if (waiting.size > 0 || waits.length > 0) {
        const view = new Map(this.records);
        for (const path of waits) {
          const rec = view.get(path);
          if (rec && rec.status === "running") view.set(path, { ...rec, status: "waiting" });
        }
        for (const path of [...waiting].flatMap((p) => [p, ...ancestorPaths(p)])) {
          const rec = view.get(path);
          if (rec && rec.status !== "pending_approval" && !SETTLED.has(rec.status)) {
            view.set(path, { ...rec, status: "pending_approval" });
          }
        }
        records = view;
      }
    }
    return this.masker.maskJson(
      buildEnvelope(doc, records, this.runtime.clock.now()) as unknown as Json,
    ) as unknown as Envelope;
  }

  /** The run so far as events, for a new listener of its event stream (ends with run.completed once ended). */
  history(): RunEvent[] {
    const doc = this.doc;
    if (!doc) return [];
    const history = replayEvents(
      this.pathsInOrder(),
      doc.finished_at ?? new Date(this.runtime.clock.now()).toISOString(),
      this.approvalBook().list().map(publicApproval),
    );
    if (isFinished(doc)) history.push(this.completedEvent());
    return history;
  }

  /** The `run.completed` event of an ended run. */
  completedEvent(): RunEvent {
    const e = this.envelope();
    return {
      type: "run.completed",
      time: e.finished_at ?? new Date(this.runtime.clock.now()).toISOString(),
      data: {
        run_id: e.run_id,
        status: e.status,
        error: e.error as Json,
        output: e.output,
        totals: e.totals,
      },
    };
  }

  /** After the run's storage was cleared (deleted): nothing of it remains in memory either. */
  forget(): void {
    this.doc = null;
    this.approvalRows = new Map();
    this.book = null;
    this.waitRows = new Map();
    this.keptSignals = new Map();
    this.waitBookCache = null;
    this.records = new Map();
    this.engine = null;
    this.controller = null;
    this.store.forget();
  }

  rootWorkflow(): CompiledWorkflow {
    if (!this.doc) throw new Error("no run");
    return workflowOf(this.doc.def, this.doc.workflow_key);
  }

  // ---- The engine --------------------------------------------------------------------------

  /** Runs (or, after an eviction, resumes) the pipeline unless it is already running. */
  resume(): void {
    const doc = this.doc;
    if (!doc || this.engine || isFinished(doc) || doc.status === "queued") return;
    const deadline = Date.parse(doc.deadline);
    const controller = new AbortController();
    this.controller = controller;
    controller.signal.addEventListener("abort", () => this.onAbort(controller.signal.reason), { once: true });
    if (this.runtime.clock.now() >= deadline) {
      controller.abort(new RunAbort("timeout"));
      return;
    }
    // The deadline is enforced by wake-ups alone (the object's alarm, set with the run's first
    // write and re-armed by every heartbeat; before that write, while its caller waits, the
    // object's timer): an in-memory timer here would keep an idle object from being evicted.
    const wf = this.rootWorkflow();
    const restored = new Map(this.records);
    if (restored.size > 0) doc.status = "running";
    const ledger = createLedger(wf.policy.costBudgetUsd, doc.ledger as unknown as LedgerState, (s) => {
      doc.ledger = s as unknown as Json;
      this.store.saveDoc(doc);
    });
    const book = this.approvalBook();
    const { runtime, store, hooks } = this;
    const host: RunHost = {
      bundle: doc.def,
      runId: doc.run_id,
      env: stringEnv(runtime.env),
      executors: runtime.executors,
      masker: this.masker,
      fetch: runtime.fetch,
      tools: runtime.tools,
      approvals: (path) => {
        const inner: ApprovalHost = {
          request: (req, signal, waiting) => book.request(path, req, signal, waiting),
        };
        return this.options.approvals ? this.options.approvals(path, inner) : inner;
      },
      waits: (path) => ({
        wait: (req, signal, waiting, begun) => this.waitBook().wait(path, req, signal, waiting, begun),
      }),
      checkpoint: (path) => ({
        load: () => store.loadCheckpoint(path),
        // Masked like everything stored: a conversation can quote a secret passed to a tool server.
        save: (state) => store.saveCheckpoint(path, this.masker.maskJson(state)),
      }),
      ai: runtime.ai,
      now: () => runtime.clock.now(),
      clock: runtime.clock,
      restored,
      records: this.records,
      outboundLimit: runtime.outboundLimit,
      onStepStarted: (path, rec) => {
        if (doc.status === "pending") {
          doc.status = "running";
          hooks.statusChanged?.("running");
        }
        hooks.stepChanged?.(path, rec);
      },
      onStepChanged: (path, rec) => hooks.stepChanged?.(path, rec),
      onStepFinished: (path, rec, effect) => {
        if (isFinished(doc)) return;
        store.stepFinished(path, rec, effect);
        hooks.stepChanged?.(path, rec);
      },
    };
    this.engine = runPipeline(host, wf, {
      prefix: "",
      params: doc.params,
      request: doc.request ?? { headers: {} },
      env: declaredEnv(wf, runtime.env),
      deadline,
      signal: controller.signal,
      budget: ledger,
      webhooksAllowed: true,
    }).then(
      () => this.finish("complete", null),
      (err: unknown) => {
        if (err instanceof RunAbort) {
          this.abort(err); // finishes the run unless onAbort already has
          return;
        }
        this.finish("failed", failureError(err, this.masker));
      },
    );
  }

  private abort(reason: RunAbort): void {
    if (this.controller) this.controller.abort(reason);
    else this.onAbort(reason);
  }

  /** Deadline or cancel: the run ends now, whatever its steps are doing. */
  private onAbort(reason: unknown): void {
    const doc = this.doc;
    if (!doc || isFinished(doc)) return;
    if (reason instanceof RunAbort && reason.kind === "canceled") {
      this.finish(
        "canceled",
        { code: "canceled", message: "the run was canceled", step: null },
        "run_canceled",
      );
      return;
    }
    this.finish("failed", deadlineError(this.rootWorkflow(), this.records));
  }

  private finish(
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
    // Steps settled here (canceled, skipped) are news to listeners.
    for (const path of this.store.runFinished(doc, finalRecords)) {
      const rec = finalRecords.get(path);
      if (rec) this.hooks.stepChanged?.(path, rec);
    }
    // Nobody will decide for a run that has ended.
    if (this.approvalRows.size > 0) {
      const book = this.approvalBook();
      for (const a of book.pending()) book.decide(a.id, "timeout", null);
    }
    this.controller = null;
    this.hooks.finished?.(doc, finalRecords);
    for (const w of this.endWaiters) w();
    this.endWaiters.clear();
  }

  /** Whether a step other than a workflow step (whose children say it) is running, or the run has not started one yet. */
  private working(): boolean {
    if (!this.doc || this.doc.status === "pending") return true;
    const workflowSteps = new Set<string>();
    for (const n of runGraph(this.doc.def, this.rootWorkflow()))
      if (n.kind === "workflow") workflowSteps.add(n.path);
    let any = false;
    for (const [path, rec] of this.records) {
      if (rec.status === "pending_approval" || rec.status === "waiting") any = true;
      if (rec.status === "running" && !workflowSteps.has(path)) return true;
    }
    // Nothing running and nothing waiting: a step is about to start (or the engine is off), keep the heartbeat.
    return !any;
  }

  /** The run's waits, created once per incarnation over the rows loaded from storage. */
  private waitBook(): WaitBook {
    if (this.waitBookCache) return this.waitBookCache;
    const { waitRows: rows, keptSignals: kept, store, hooks, runtime } = this;
    this.waitBookCache = new WaitBook(
      {
        get: (path) => rows.get(path),
        put: (rec) => {
          rows.set(rec.path, rec);
          store.saveWait(rec);
        },
        all: () => [...rows.values()],
        kept: (name) => kept.get(name),
        keep: (name, body) => {
          kept.set(name, body);
          store.keepSignal(name, body);
        },
        dropKept: (name) => {
          kept.delete(name);
          store.dropKeptSignal(name);
        },
      },
      {
        now: () => runtime.clock.now(),
        masker: this.masker,
        started: (rec) => {
          // Before a wait: what has finished is kept (SPEC 15).
          store.checkpoint();
          this.options.waitStarted?.(rec);
          hooks.rearm?.();
        },
      },
    );
    return this.waitBookCache;
  }

  /** The run's approvals, created once per incarnation over the rows loaded from storage. */
  private approvalBook(): ApprovalBook {
    if (this.book) return this.book;
    const doc = this.doc;
    if (!doc) throw new Error("no run");
    const rows = this.approvalRows;
    const { runtime, hooks, options } = this;
    this.book = new ApprovalBook(
      {
        get: (id) => rows.get(id),
        put: (rec) => {
          rows.set(rec.id, rec);
          this.store.saveApproval(rec);
        },
        all: () => [...rows.values()],
      },
      {
        runId: doc.run_id,
        deadline: Date.parse(doc.deadline),
        masker: this.masker,
        now: () => runtime.clock.now(),
        origin: doc.origin ?? null,
        allowPrivate: runtime.allowPrivate,
        fetch: runtime.notifyFetch,
        requested: (rec, created) => {
          // Before a wait: what has finished is kept (SPEC 15).
          this.store.checkpoint();
          if (created) hooks.approvalEvent?.("approval.requested", publicApproval(rec));
          options.approvalRequested?.(rec, created);
          hooks.rearm?.();
        },
        decided: (rec) => hooks.approvalEvent?.("approval.decided", publicApproval(rec)),
      },
    );
    return this.book;
  }

  /** Every step record, parents before their children, in pipeline order. */
  private pathsInOrder(): Array<[string, StepRecord]> {
    const out: Array<[string, StepRecord]> = [];
    if (!this.doc) return out;
    forEachRecordPath(this.doc.def, this.rootWorkflow(), this.records, (path) => {
      const rec = this.records.get(path);
      if (rec) out.push([path, rec]);
    });
    return out;
  }

  private makeMasker(doc: RunDoc): Masker {
    const wf = workflowOf(doc.def, doc.workflow_key);
    return createMasker(collectSecrets(doc.def, wf, this.runtime.env).values);
  }
}

function workflowOf(def: Bundle, key: string): CompiledWorkflow {
  const wf = def.workflows[key];
  if (!wf) throw new Error(`workflow ${key} is missing from the run's definition`);
  return wf;
}
