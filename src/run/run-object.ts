/**
 * One Durable Object per run. It owns the run's storage (SQLite-backed KV: one `run` key, one
 * `step/<path>` key per finished step), drives the engine, and enforces the deadline with an alarm, so the deadline holds
 * even if the object was evicted. Evicted mid-run,
 * it resumes from storage on its next wake-up (any request, or the heartbeat alarm): finished steps
 * are not repeated, a step that was in flight starts again with the same idempotency key.
 *
 * The object is a thin shell: scheduling, expressions and step semantics live in src/engine.
 */
import { DurableObject } from "cloudflare:workers";
import workflowBundle from "workflow-bundle";
import type { Bundle, CompiledAuth, CompiledWorkflow, Json, JsonObject } from "../bundle.ts";
import { createLedger, type Ledger, type LedgerState } from "../engine/budget.ts";
import { systemClock } from "../engine/clock.ts";
import { createMasker, type Masker } from "../engine/mask.ts";
import { RunAbort, type RunHost, runPipeline } from "../engine/scheduler.ts";
import type { RunStatus, StepRecord } from "../engine/types.ts";
import { executors } from "../steps/index.ts";
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
import { approvalEvent, EventHub, type RunEvent, replayEvents, stepEvent } from "./events.ts";
import { type ListedRun, recordRun } from "./listing.ts";
import { retentionMs } from "./listing-layout.ts";
import { MAX_OUTBOUND, OutboundLimiter } from "./outbound.ts";
import { finishedRunLog } from "./run-log.ts";
import { collectSecrets, declaredEnv, stringEnv } from "./secrets.ts";
import { deadlineError, failureError, settleRecords } from "./settle.ts";
import { mcpToolHost } from "./tool-host.ts";

/** While a run is active the alarm wakes the object at least this often (to resume after eviction). */
const HEARTBEAT_MS = 60_000;
/**
 * A run still active this long after it started is written to the listing by its alarm (a run
 * that finishes sooner is written once, finished). An alarm, not a timer: it survives eviction.
 */
const LISTING_FIRST_WRITE_MS = 2_000;
/** Until the listing has acknowledged a finished run, its alarm retries this often (doubling, capped). */
const LISTING_RETRY_MS = 3_000;
const LISTING_RETRY_MAX_MS = 300_000;

export interface StartRequest {
  workflowKey: string;
  params: JsonObject;
  /** The recorded request: `{headers}` with the workflow's declared headers (SPEC section 5). */
  request: JsonObject;
  /** Canonical hash of the body, for Idempotency-Key replays (null without a key). */
  bodyHash: string | null;
  idempotencyKey: string | null;
  waitMs: number;
  /** Origin of the invoke (`https://host`): approvals' `decide_url` is built on it. */
  origin?: string | null;
}

export type StartResult =
  | { outcome: "started" | "existing"; runId: string; envelope: Envelope | null }
  | { outcome: "conflict"; runId: string };

export interface RunView {
  auth: CompiledAuth | null;
  envelope: Envelope;
  graph: GraphNode[];
}

/** The RPC surface the Worker uses (typed plainly: the generated stub types are too deep). */
export interface RunRpc {
  start(req: StartRequest): Promise<StartResult>;
  view(): Promise<RunView | null>;
  cancel(): Promise<CancelResult>;
  remove(): Promise<"deleted" | "active" | "not_found">;
  relist(): Promise<void>;
  expire(): Promise<"deleted" | "kept" | "gone">;
  fetch(request: Request): Promise<Response>;
  /** Every approval of the run (null: no such run). */
  approvals(): Promise<ApprovalRecord[] | null>;
  /** Decides one approval by id, or (ktsu's form) the oldest pending approval of a step. */
  decide(
    target: { id: string } | { step: string },
    decision: "approved" | "rejected",
    comment: string | null,
  ): Promise<DecideResult>;
}

export type CancelResult =
  | { outcome: "canceled"; envelope: Envelope }
  | { outcome: "not_active" }
  | { outcome: "not_found" };

/** Storage keys: the run document, and one key per step record by slash path. */
const RUN_KEY = "run";
const STEP_PREFIX = "step/";
/** One row per approval, by id. */
const APPROVAL_PREFIX = "approval/";
/** An agent step's conversation while it runs, by step path (deleted when the step finishes). */
const CHECKPOINT_PREFIX = "checkpoint/";

const TERMINAL = new Set(["complete", "failed", "canceled"]);
/** Step statuses after which the engine no longer writes to the record. */
const SETTLED = new Set(["complete", "failed", "skipped", "canceled"]);

export class RunObject extends DurableObject<Env> {
  private doc: RunDoc | null = null;
  private records = new Map<string, StepRecord>();
  /** JSON of each step row as stored, so finishing writes only what changed. */
  private stored = new Map<string, string>();
  /** The record object each row was last stored from (a settled one is never changed again). */
  private storedRecords = new Map<string, StepRecord>();
  private controller: AbortController | null = null;
  private engine: Promise<void> | null = null;
  private waiters = new Set<() => void>();
  private masker: Masker = createMasker([]);
  private readonly hub = new EventHub();
  private approvalRows = new Map<string, ApprovalRecord>();
  private book: ApprovalBook | null = null;
  /**
   * Paths with a stored conversation checkpoint, so that finishing a step (or the run) deletes
   * rows that exist instead of issuing a delete per step and a scan per run (`npm run bench`).
   */
  private checkpoints = new Set<string>();
  /** The status the run listing has acknowledged (memory only: after a wake-up it is sent again). */
  private listed: RunStatus | null = null;
  private listingWrite: Promise<boolean> | null = null;
  private listingFailures = 0;
  /** When the alarm this incarnation set will fire (null: unknown or none). */
  private alarmAt: number | null = null;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    ctx.blockConcurrencyWhile(async () => {
      // The synchronous KV API of SQLite-backed objects: one row per key, and no schema to create
      // on every new run object (DDL on a fresh database was the largest fixed cost per run).
      const kv = ctx.storage.kv;
      const run = kv.get<string>(RUN_KEY);
      if (run === undefined) return;
      this.doc = JSON.parse(run) as RunDoc;
      // What was stored is kept only while steps can still change (see writeStep).
      const active = !TERMINAL.has(this.doc.status);
      for (const [key, json] of kv.list<string>({ prefix: STEP_PREFIX })) {
        const path = key.slice(STEP_PREFIX.length);
        this.records.set(path, JSON.parse(json) as StepRecord);
        if (active) this.stored.set(path, json);
      }
      for (const [key] of kv.list({ prefix: CHECKPOINT_PREFIX })) {
        this.checkpoints.add(key.slice(CHECKPOINT_PREFIX.length));
      }
      for (const [, json] of kv.list<string>({ prefix: APPROVAL_PREFIX })) {
        const rec = JSON.parse(json) as ApprovalRecord;
        this.approvalRows.set(rec.id, rec);
      }
      this.masker = this.makeMasker(this.doc);
      if (!TERMINAL.has(this.doc.status)) this.resume();
    });
  }

  // ---- RPC used by the Worker -------------------------------------------------------------

  async start(req: StartRequest): Promise<StartResult> {
    const runId = this.ctx.id.toString();
    await this.dropIfExpired();
    if (this.doc) {
      if (this.doc.body_hash !== req.bodyHash || this.doc.workflow_key !== req.workflowKey) {
        return { outcome: "conflict", runId };
      }
      return { outcome: "existing", runId, envelope: await this.waitFinished(req.waitMs) };
    }
    // The run is pinned to this deployment's definition (this module's own copy of the bundle).
    const def = pinDefinition(workflowBundle, req.workflowKey);
    const wf = this.workflowOf(def, req.workflowKey);
    const now = Date.now();
    const deadline = now + wf.policy.timeoutS * 1000;
    const doc: RunDoc = {
      run_id: runId,
      workflow_key: req.workflowKey,
      status: "pending",
      error: null,
      params: req.params,
      request: req.request,
      created_at: new Date(now).toISOString(),
      deadline: new Date(deadline).toISOString(),
      finished_at: null,
      body_hash: req.bodyHash,
      idempotency_key: req.idempotencyKey,
      def,
      ledger: { spent: 0, outstanding: {} },
      origin: req.origin ?? null,
    };
    this.masker = this.makeMasker(doc);
    doc.params = this.masker.maskJson(doc.params);
    doc.request = this.masker.maskJson(req.request);
    this.doc = doc;
    this.writeDoc();
    // Not awaited: storage writes are ordered and the output gate holds replies until they land.
    // The first alarm also lists a run that is still active by then (see LISTING_FIRST_WRITE_MS).
    this.setAlarmAt(Math.min(deadline, now + LISTING_FIRST_WRITE_MS)).catch(() => {});
    this.resume();
    return { outcome: "started", runId, envelope: await this.waitFinished(req.waitMs) };
  }

  /** The envelope once the run has finished, or null if it is still active after `ms`. */
  async waitFinished(ms: number): Promise<Envelope | null> {
    if (!this.doc) return null;
    if (!TERMINAL.has(this.doc.status) && ms > 0) {
      let done: () => void = () => {};
      const finished = new Promise<void>((resolve) => {
        done = resolve;
        this.waiters.add(resolve);
      });
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([finished, new Promise<void>((r) => (timer = setTimeout(r, ms)))]);
      if (timer !== undefined) clearTimeout(timer);
      this.waiters.delete(done);
    }
    return this.doc && TERMINAL.has(this.doc.status) ? this.envelope() : null;
  }

  /** GET /runs/{id}/events (the Worker has checked credentials): Server-Sent Events. */
  override async fetch(_request: Request): Promise<Response> {
    await this.dropIfExpired();
    const doc = this.doc;
    if (!doc) return new Response("no run", { status: 404 });
    const history = replayEvents(
      this.pathsInOrder(),
      doc.finished_at ?? new Date().toISOString(),
      this.approvalBook().list().map(publicApproval),
    );
    const ended = TERMINAL.has(doc.status);
    if (ended) history.push(this.runCompletedEvent());
    return this.hub.subscribe(history, ended);
  }

  async view(): Promise<RunView | null> {
    await this.dropIfExpired();
    if (!this.doc) return null;
    const wf = this.rootWorkflow();
    return { auth: wf.auth, envelope: this.envelope(), graph: runGraph(this.doc.def, wf) };
  }

  async cancel(): Promise<CancelResult> {
    await this.dropIfExpired();
    if (!this.doc) return { outcome: "not_found" };
    if (TERMINAL.has(this.doc.status)) return { outcome: "not_active" };
    this.abortRun(new RunAbort("canceled"));
    return { outcome: "canceled", envelope: this.envelope() };
  }

  async approvals(): Promise<ApprovalRecord[] | null> {
    await this.dropIfExpired();
    if (!this.doc) return null;
    return this.approvalBook().list().map(publicApproval);
  }

  async decide(
    target: { id: string } | { step: string },
    decision: "approved" | "rejected",
    comment: string | null,
  ): Promise<DecideResult> {
    await this.dropIfExpired();
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
    if (result.outcome === "decided" && !TERMINAL.has(this.doc.status)) {
      // Evicted while waiting: the step resumes, asks again with the same key and finds the decision.
      if (!this.engine) this.resume();
      this.armAlarm();
    }
    return result.outcome === "not_found" ? result : { ...result, approval: publicApproval(result.approval) };
  }

  async remove(): Promise<"deleted" | "active" | "not_found"> {
    await this.dropIfExpired();
    if (!this.doc) return "not_found";
    if (!TERMINAL.has(this.doc.status)) return "active";
    await this.deleteRun();
    return "deleted";
  }

  /**
   * Retention: the run's listing shard, when its hour has passed retention, asks each of its runs
   * to go (src/run/run-index.ts), so a finished run needs no alarm of its own for it (one storage
   * write less per run). A run whose retention was raised since keeps itself with its own alarm.
   */
  async expire(): Promise<"deleted" | "kept" | "gone"> {
    const doc = this.doc;
    if (!doc) return "gone";
    if (!TERMINAL.has(doc.status)) return "kept";
    const expires = this.expiresAt(doc);
    if (Date.now() >= expires) {
      await this.deleteRun();
      return "deleted";
    }
    await this.setAlarmAt(expires);
    return "kept";
  }

  /** The listing's legacy index asks runs it knew to report themselves (src/run/run-index.ts). */
  async relist(): Promise<void> {
    this.listed = null;
    await this.syncListing();
  }

  // ---- Alarm: deadline, heartbeat, approval timeouts, listing retries ---------------------

  override async alarm(): Promise<void> {
    this.alarmAt = null;
    const doc = this.doc;
    if (!doc) return;
    const now = Date.now();
    if (TERMINAL.has(doc.status)) {
      // Runs from before the sharded listing kept their retention alarm; it still ends them.
      if (now >= this.expiresAt(doc)) await this.deleteRun();
      else await this.listFinished();
      return;
    }
    const deadline = Date.parse(doc.deadline);
    if (now >= deadline) {
      this.abortRun(new RunAbort("timeout"));
      return;
    }
    this.approvalBook().expire(now);
    if (!this.engine) this.resume();
    // A run still active is listed (as running) by now; a failed write comes back soon.
    const listed = await this.syncListing();
    const next = this.nextAlarm(Date.now());
    await this.setAlarmAt(listed ? next : Math.min(next, Date.now() + this.listingRetryMs()));
  }

  /**
   * The deadline, the earliest approval timeout, and — only while some step is actually working —
   * the heartbeat that resumes an evicted run. A run whose steps all wait for humans sleeps until
   * a decision (a request wakes it), an approval's timeout or the deadline.
   */
  private nextAlarm(now: number): number {
    const doc = this.doc;
    if (!doc) return now + HEARTBEAT_MS;
    let next = Date.parse(doc.deadline);
    const expiry = this.approvalBook().nextExpiry();
    if (expiry !== null) next = Math.min(next, expiry);
    if (this.working()) next = Math.min(next, now + HEARTBEAT_MS);
    return next;
  }

  /** Whether a step other than a workflow step (whose children say it) is running, or the run has not started one yet. */
  private working(): boolean {
    if (!this.doc || this.doc.status === "pending") return true;
    const workflowSteps = this.workflowStepPaths();
    let any = false;
    for (const [path, rec] of this.records) {
      if (rec.status === "pending_approval") any = true;
      if (rec.status === "running" && !workflowSteps.has(path)) return true;
    }
    // Nothing running and nothing waiting: a step is about to start (or the engine is off), keep the heartbeat.
    return !any;
  }

  private workflowStepPaths(): Set<string> {
    const out = new Set<string>();
    if (!this.doc) return out;
    for (const n of runGraph(this.doc.def, this.rootWorkflow())) if (n.kind === "workflow") out.add(n.path);
    return out;
  }

  private armAlarm(): void {
    if (!this.doc || TERMINAL.has(this.doc.status)) return;
    this.setAlarmAt(this.nextAlarm(Date.now())).catch(() => {});
  }

  /** setAlarm, remembering when it will fire. */
  private setAlarmAt(at: number): Promise<void> {
    this.alarmAt = at;
    return this.ctx.storage.setAlarm(at);
  }

  // ---- Run listing: the run reports its own status, never on the invoke's path --------------

  /**
   * Sends the run's current status to the listing unless it has it already; true once the
   * listing has it. One write at a time; a status that changed meanwhile is sent next.
   */
  private async syncListing(): Promise<boolean> {
    for (;;) {
      if (this.listingWrite) {
        await this.listingWrite;
        continue;
      }
      const doc = this.doc;
      if (!doc || this.listed === doc.status) return true;
      const status = doc.status;
      const write = recordRun(this.env, this.listedRun(doc)).then(
        () => {
          // A run deleted meanwhile (and perhaps created anew under the same id) is not this one.
          if (this.doc === doc) this.listed = status;
          this.listingFailures = 0;
          return true;
        },
        () => {
          this.listingFailures += 1;
          return false;
        },
      );
      this.listingWrite = write;
      const ok = await write;
      this.listingWrite = null;
      if (!ok) return false;
    }
  }

  /**
   * A finished run, after its answer: the listing learns its final status. Until it has, an
   * alarm stays close (finish() left one due within LISTING_RETRY_MS) and retries, also after an
   * eviction; once it has, nothing more is due (the listing shard ends the run's retention), so
   * the alarm is deleted: `npm run bench` measured an alarm that fires for nothing as the
   * largest single cost of a run above the floor, and its deletion as nearly free.
   */
  private async listFinished(): Promise<void> {
    const doc = this.doc;
    if (!doc) return;
    const listed = await this.syncListing();
    if (this.doc !== doc) return; // deleted meanwhile
    if (listed) {
      this.alarmAt = null;
      await this.ctx.storage.deleteAlarm();
    } else {
      await this.setAlarmAt(Date.now() + this.listingRetryMs());
    }
  }

  /** A finished run past retention is gone for every reader, even before its shard says so. */
  private async dropIfExpired(): Promise<void> {
    const doc = this.doc;
    if (doc && TERMINAL.has(doc.status) && Date.now() >= this.expiresAt(doc)) await this.deleteRun();
  }

  private async deleteRun(): Promise<void> {
    await this.ctx.storage.deleteAll();
    this.reset();
  }

  private listingRetryMs(): number {
    return Math.min(LISTING_RETRY_MAX_MS, LISTING_RETRY_MS * 2 ** Math.max(0, this.listingFailures - 1));
  }

  /** One structured line per finished run, for Workers Logs (src/run/run-log.ts). */
  private logFinished(doc: RunDoc, records: ReadonlyMap<string, StepRecord>): void {
    const line = finishedRunLog(doc, this.workflowOf(doc.def, doc.workflow_key), records);
    console.log(JSON.stringify(this.masker.maskJson(line)));
  }

  private listedRun(doc: RunDoc): ListedRun {
    return {
      run_id: doc.run_id,
      workflow: this.workflowOf(doc.def, doc.workflow_key).name,
      status: doc.status,
      created_at: doc.created_at,
      finished_at: doc.finished_at,
    };
  }

  /** The run's approvals, created once per incarnation over the rows loaded from storage. */
  private approvalBook(): ApprovalBook {
    if (this.book) return this.book;
    const doc = this.doc;
    if (!doc) throw new Error("no run");
    const rows = this.approvalRows;
    const kv = this.ctx.storage.kv;
    this.book = new ApprovalBook(
      {
        get: (id) => rows.get(id),
        put: (rec) => {
          rows.set(rec.id, rec);
          kv.put(APPROVAL_PREFIX + rec.id, JSON.stringify(rec));
        },
        all: () => [...rows.values()],
      },
      {
        runId: doc.run_id,
        deadline: Date.parse(doc.deadline),
        masker: this.masker,
        now: () => Date.now(),
        origin: doc.origin ?? null,
        allowPrivate: this.env.ALLOW_PRIVATE_WEBHOOKS === "true",
        fetch: (input, init) => fetch(input, init),
        requested: (rec, created) => {
          const step = this.records.get(rec.step);
          if (step && step.status === "running") {
            step.status = "pending_approval";
            this.publishStep(rec.step, step);
          }
          if (created && this.hub.listening)
            this.hub.publish(approvalEvent("approval.requested", publicApproval(rec)));
          this.armAlarm();
        },
        decided: (rec) => {
          const step = this.records.get(rec.step);
          const stillWaiting = [...rows.values()].some((a) => a.step === rec.step && a.status === "pending");
          if (step && step.status === "pending_approval" && !stillWaiting) {
            step.status = "running";
            this.publishStep(rec.step, step);
          }
          if (this.hub.listening) this.hub.publish(approvalEvent("approval.decided", publicApproval(rec)));
        },
      },
    );
    return this.book;
  }

  // ---- Engine ------------------------------------------------------------------------------

  private resume(): void {
    const doc = this.doc;
    if (!doc || this.engine) return;
    const deadline = Date.parse(doc.deadline);
    const controller = new AbortController();
    this.controller = controller;
    controller.signal.addEventListener("abort", () => this.onAbort(controller.signal.reason), { once: true });
    if (Date.now() >= deadline) {
      controller.abort(new RunAbort("timeout"));
      return;
    }
    // The deadline is enforced by the alarm alone (set at start and re-armed by every heartbeat):
    // an in-memory timer would keep an idle object from being evicted and adds nothing.

    const wf = this.rootWorkflow();
    const restored = new Map(this.records);
    if (restored.size > 0) doc.status = "running";
    const ledger: Ledger = createLedger(
      wf.policy.costBudgetUsd,
      doc.ledger as unknown as LedgerState,
      (s) => {
        doc.ledger = s as unknown as Json;
        this.writeDoc();
      },
    );
    const limiter = new OutboundLimiter(MAX_OUTBOUND);
    const outbound = (input: string | Request, init?: RequestInit) =>
      limiter.run(() => fetch(input, init), init?.signal ?? undefined);
    const book = this.approvalBook();
    const kv = this.ctx.storage.kv;
    const host: RunHost = {
      bundle: doc.def,
      runId: doc.run_id,
      env: stringEnv(this.env),
      executors,
      masker: this.masker,
      fetch: outbound,
      tools: mcpToolHost(outbound, this.env.ALLOW_PRIVATE_WEBHOOKS === "true"),
      approvals: (path) => ({ request: (req, signal) => book.request(path, req, signal) }),
      checkpoint: (path) => ({
        load: () => {
          const json = kv.get<string>(CHECKPOINT_PREFIX + path);
          return json === undefined ? null : (JSON.parse(json) as Json);
        },
        // Masked like everything stored: a conversation can quote a secret passed to a tool server.
        save: (state) => {
          this.checkpoints.add(path);
          kv.put(CHECKPOINT_PREFIX + path, JSON.stringify(this.masker.maskJson(state)));
        },
      }),
      ai: (this.env as unknown as { AI?: RunHost["ai"] }).AI,
      now: () => systemClock.now(),
      clock: systemClock,
      restored,
      records: this.records,
      outboundLimit: MAX_OUTBOUND,
      onStepStarted: (path, rec) => {
        if (doc.status === "pending") {
          doc.status = "running";
          // Only a run listed while still pending (rare: its first step waited) needs this.
          if (this.listed === "pending") void this.syncListing();
        }
        this.publishStep(path, rec);
      },
      onStepFinished: (path, rec) => {
        if (TERMINAL.has(doc.status)) return;
        this.writeStep(path, rec);
        if (this.checkpoints.delete(path)) kv.delete(CHECKPOINT_PREFIX + path);
        this.publishStep(path, rec);
      },
    };
    this.engine = runPipeline(host, wf, {
      prefix: "",
      params: doc.params,
      request: doc.request ?? { headers: {} },
      env: declaredEnv(wf, this.env as unknown as Record<string, unknown>),
      deadline,
      signal: controller.signal,
      budget: ledger,
      webhooksAllowed: true,
    }).then(
      () => this.finish("complete", null),
      (err: unknown) => {
        if (err instanceof RunAbort) {
          this.abortRun(err); // finishes the run unless onAbort already has
          return;
        }
        this.finish("failed", failureError(err, this.masker));
      },
    );
  }

  private abortRun(reason: RunAbort): void {
    if (this.controller) this.controller.abort(reason);
    else this.onAbort(reason);
  }

  /** Deadline or cancel: the run ends now, whatever its steps are doing. */
  private onAbort(reason: unknown): void {
    const doc = this.doc;
    if (!doc || TERMINAL.has(doc.status)) return;
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
    if (!doc || TERMINAL.has(doc.status)) return;
    const now = Date.now();
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
    for (const [path, rec] of finalRecords) {
      // A settled record stored as it finished is final: no need to serialize it again to see so.
      if (SETTLED.has(rec.status) && this.storedRecords.get(path) === rec) continue;
      const before = this.stored.get(path);
      if (rec.status !== "pending" || before !== undefined) this.writeStep(path, rec);
      // Steps settled here (canceled, skipped) are news to listeners.
      if (this.stored.get(path) !== before) this.publishStep(path, rec);
    }
    // Late results of aborted steps must not change the final record.
    this.records = finalRecords;
    // Nothing writes a step row of a finished run again: an object that lingers in memory after
    // its run (many do in a busy isolate) keeps the records it serves, not a second copy as JSON.
    this.stored = new Map();
    this.storedRecords = new Map();
    // Nobody will decide for a run that has ended; its conversations are no longer needed.
    if (this.approvalRows.size > 0) {
      const book = this.approvalBook();
      for (const a of book.pending()) book.decide(a.id, "timeout", null);
    }
    for (const path of this.checkpoints) this.ctx.storage.kv.delete(CHECKPOINT_PREFIX + path);
    this.checkpoints.clear();
    this.writeDoc();
    // The listing write waits for the answer to leave (a timer, not a microtask); an alarm due
    // within LISTING_RETRY_MS retries it if this incarnation does not get there. The one start()
    // set serves for a run that finished at once (no second alarm write).
    if (this.alarmAt === null || this.alarmAt > now + LISTING_RETRY_MS)
      this.setAlarmAt(now + LISTING_RETRY_MS).catch(() => {});
    setTimeout(() => {
      // The log line too waits for the answer: nothing a caller waits for depends on it.
      try {
        this.logFinished(doc, finalRecords);
      } catch {
        // Never let the log line break the run's bookkeeping.
      }
      void this.listFinished().catch(() => {});
    }, 0);
    this.controller = null;
    if (this.hub.listening) this.hub.publish(this.runCompletedEvent());
    this.hub.close();
    for (const w of this.waiters) w();
    this.waiters.clear();
  }

  // ---- Storage and helpers ------------------------------------------------------------------

  private writeDoc(): void {
    if (!this.doc) return;
    this.ctx.storage.kv.put(RUN_KEY, JSON.stringify(this.doc));
  }

  private writeStep(path: string, rec: StepRecord): void {
    const json = JSON.stringify(rec);
    if (this.stored.get(path) === json) return;
    this.ctx.storage.kv.put(STEP_PREFIX + path, json);
    this.stored.set(path, json);
    this.storedRecords.set(path, rec);
  }

  private reset(): void {
    this.doc = null;
    this.listed = null;
    this.alarmAt = null;
    this.approvalRows = new Map();
    this.book = null;
    this.checkpoints = new Set();
    this.records = new Map();
    this.stored = new Map();
    this.storedRecords = new Map();
    this.engine = null;
    this.controller = null;
  }

  private expiresAt(doc: RunDoc): number {
    return Date.parse(doc.finished_at ?? doc.created_at) + retentionMs(this.env);
  }

  private makeMasker(doc: RunDoc): Masker {
    const wf = this.workflowOf(doc.def, doc.workflow_key);
    return createMasker(collectSecrets(doc.def, wf, this.env as unknown as Record<string, unknown>).values);
  }

  private workflowOf(def: Bundle, key: string): CompiledWorkflow {
    const wf = def.workflows[key];
    if (!wf) throw new Error(`workflow ${key} is missing from the run's definition`);
    return wf;
  }

  private rootWorkflow(): CompiledWorkflow {
    if (!this.doc) throw new Error("no run");
    return this.workflowOf(this.doc.def, this.doc.workflow_key);
  }

  private publishStep(path: string, rec: StepRecord): void {
    if (!this.hub.listening) return;
    const ev = stepEvent(path, rec, this.doc?.finished_at ?? new Date().toISOString());
    if (ev) this.hub.publish(ev);
  }

  private runCompletedEvent(): RunEvent {
    const e = this.envelope();
    return {
      type: "run.completed",
      time: e.finished_at ?? new Date().toISOString(),
      data: {
        run_id: e.run_id,
        status: e.status,
        error: e.error as Json,
        output: e.output,
        totals: e.totals,
      },
    };
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

  private envelope(): Envelope {
    if (!this.doc) throw new Error("no run");
    let records: ReadonlyMap<string, StepRecord> = this.records;
    if (!TERMINAL.has(this.doc.status)) {
      // Right after a wake-up the resumed step has not asked again yet: storage says it waits.
      const waiting = new Set(
        [...this.approvalRows.values()].filter((a) => a.status === "pending").map((a) => a.step),
      );
      if (waiting.size > 0) {
        const view = new Map(this.records);
        for (const path of waiting) {
          const rec = view.get(path);
          if (rec && rec.status !== "pending_approval" && !SETTLED.has(rec.status)) {
            view.set(path, { ...rec, status: "pending_approval" });
          }
        }
        records = view;
      }
    }
    return this.masker.maskJson(
      buildEnvelope(this.doc, records, Date.now()) as unknown as Json,
    ) as unknown as Envelope;
  }
}
