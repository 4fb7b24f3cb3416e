/**
 * A run's approvals, waits, kept signals and deliveries: the rows loaded from storage
 * (run-store.ts), and the books over them (approvals.ts, waits.ts, deliveries.ts), made once per
 * incarnation of the run's object. The
 * lifecycle asks them when the run must wake (an approval's timeout, a wait's end), hands them
 * decisions and signals, and hears from them when a step starts waiting (a checkpoint first).
 */
import type { CompiledWorkflow, Json } from "../../bundle.ts";
import type { Masker } from "../../engine/mask.ts";
import type { StepTracer } from "../../engine/trace.ts";
import type { StepRecord } from "../../engine/types.ts";
import { type DeliveryTarget, deliveryTargets, RunDeliveries } from "../deliveries/deliveries.ts";
import type { SignalResult } from "../run-calls.ts";
import type { RunDoc } from "../run-doc.ts";
import type { RunStore, StoredRun } from "../run-store.ts";
import { ApprovalBook, type ApprovalRecord, type DecideResult, publicApproval } from "../waits/approvals.ts";
import { WaitBook, type WaitRecord } from "../waits/waits.ts";

/** What the books need of the run around them. */
export interface BookHost {
  store: RunStore;
  masker(): Masker;
  now(): number;
  allowPrivate: boolean;
  notifyFetch: (input: string | Request, init?: RequestInit) => Promise<Response>;
  /** Client spans of delivery attempts, under the run's root span (none: no trace is exported). */
  trace?(): StepTracer | undefined;
  /** A step started waiting (for a human, a signal, the clock): what has finished is kept first. */
  waitingStarted(): void;
  approvalRequested(rec: ApprovalRecord, created: boolean): void;
  approvalDecided(rec: ApprovalRecord): void;
  waitStarted(rec: WaitRecord): void;
}

export class RunBooks {
  /** The run's deliveries (its notifications, its approval requests). */
  readonly deliveries: RunDeliveries;
  private approvalRows = new Map<string, ApprovalRecord>();
  private waitRows = new Map<string, WaitRecord>();
  private kept = new Map<string, Json>();
  private approvalBook: ApprovalBook | null = null;
  private waitBook: WaitBook | null = null;
  private readonly host: BookHost;

  constructor(host: BookHost) {
    this.host = host;
    this.deliveries = new RunDeliveries({
      store: host.store,
      now: () => host.now(),
      random: Math.random,
      fetch: (input, init) => host.notifyFetch(input, init),
      allowPrivate: host.allowPrivate,
      trace: () => host.trace?.(),
    });
  }

  /** Every delivery of the run so far (deliveries.ts): a run without any reads nothing for them. */
  deliveryTargets(
    doc: RunDoc,
    workflow: CompiledWorkflow,
    env: Record<string, unknown>,
    push?: { records: ReadonlyMap<string, StepRecord>; output: () => Json },
  ): DeliveryTarget[] {
    const approvals = this.hasApprovals ? [...this.approvalRows.values()] : [];
    const waits = () => [...this.waitRows.values()];
    return deliveryTargets({
      doc,
      workflow,
      env,
      masker: this.host.masker(),
      approvals,
      ...(push && doc.a2a_push?.length ? { push: { ...push, waits } } : {}),
    });
  }

  /** The rows of a run read back from storage. */
  restore(stored: StoredRun): void {
    for (const a of stored.approvals) this.approvalRows.set(a.id, a);
    for (const w of stored.waits) this.waitRows.set(w.path, w);
    this.kept = stored.kept;
  }

  /** Whether the run has any approval at all (a run without one never builds its book). */
  get hasApprovals(): boolean {
    return this.approvalRows.size > 0;
  }

  /** Paths of steps with an approval pending, and of waits waiting (what storage says waits). */
  held(): { approvals: string[]; waits: string[] } {
    const approvals = [...this.approvalRows.values()]
      .filter((a) => a.status === "pending")
      .map((a) => a.step);
    return { approvals, waits: this.waits().waitingPaths() };
  }

  /** The run's waits, created once per incarnation over the rows loaded from storage. */
  waits(): WaitBook {
    if (this.waitBook) return this.waitBook;
    const { waitRows: rows, kept, host } = this;
    this.waitBook = new WaitBook(
      {
        get: (path) => rows.get(path),
        put: (rec) => {
          rows.set(rec.path, rec);
          host.store.saveWait(rec);
        },
        all: () => [...rows.values()],
        kept: (name) => kept.get(name),
        keep: (name, body) => {
          kept.set(name, body);
          host.store.keepSignal(name, body);
        },
        dropKept: (name) => {
          kept.delete(name);
          host.store.dropKeptSignal(name);
        },
      },
      {
        now: () => host.now(),
        masker: host.masker(),
        started: (rec) => {
          host.waitingStarted();
          host.waitStarted(rec);
        },
      },
    );
    return this.waitBook;
  }

  /** The run's approvals, created once per incarnation over the rows loaded from storage. */
  approvals(doc: RunDoc): ApprovalBook {
    if (this.approvalBook) return this.approvalBook;
    const rows = this.approvalRows;
    const { host } = this;
    this.approvalBook = new ApprovalBook(
      {
        get: (id) => rows.get(id),
        put: (rec) => {
          rows.set(rec.id, rec);
          host.store.saveApproval(rec);
        },
        all: () => [...rows.values()],
      },
      {
        runId: doc.run_id,
        deadline: Date.parse(doc.deadline),
        masker: host.masker(),
        now: () => host.now(),
        requested: (rec, created) => {
          host.waitingStarted();
          host.approvalRequested(rec, created);
        },
        decided: (rec) => host.approvalDecided(rec),
      },
    );
    return this.approvalBook;
  }

  /** When an approval's own timeout or a wait's end is next due (null: none). */
  nextDue(doc: RunDoc): number | null {
    const expiry = this.hasApprovals ? this.approvals(doc).nextExpiry() : null;
    const due = this.waits().nextDue();
    if (expiry === null) return due;
    return due === null ? expiry : Math.min(expiry, due);
  }

  /** Decides one approval by id, or (ktsu's form) the oldest pending approval of a step; public shapes. */
  decide(
    doc: RunDoc,
    target: { id: string } | { step: string },
    decision: "approved" | "rejected" | "timeout",
    comment: string | null,
  ): DecideResult {
    const book = this.approvals(doc);
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
    return result.outcome === "not_found" ? result : { ...result, approval: publicApproval(result.approval) };
  }

  /**
   * A signal for an active run: delivered to its earliest wait for `name` (and `key`) waiting
   * now, refused by that wait's schema (paths and messages masked: they quote the sender's property
   * names, which may hold a secret), or kept for a wait not reached yet (without a key).
   * `resume`: the wait that took it has no step listening in memory (evicted while waiting).
   */
  signal(name: string, body: Json, key: string | null): { result: SignalResult; resume: boolean } {
    const book = this.waits();
    const result = book.deliver(name, body, key);
    if (result.outcome === "delivered") return { result, resume: !book.hasListener(result.step) };
    if (result.outcome === "invalid") {
      const m = this.host.masker();
      const errors = result.errors.map((e) => ({ path: m.maskText(e.path), message: m.maskText(e.message) }));
      return { result: { ...result, errors }, resume: false };
    }
    if (key !== null) return { result: { outcome: "not_waiting" }, resume: false };
    return { result: { outcome: book.keep(name, body) }, resume: false };
  }

  /** After the run's storage was cleared. */
  forget(): void {
    this.deliveries.reset();
    this.approvalRows = new Map();
    this.waitRows = new Map();
    this.kept = new Map();
    this.approvalBook = null;
    this.waitBook = null;
  }
}
