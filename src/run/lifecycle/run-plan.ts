/**
 * What a run's Durable Object must do besides running steps, and when: list the run, give its
 * concurrency slot back, make its deliveries, register a keyed wait, log its line, wake up
 * (deadline, heartbeat, listing retries, the first write), and go when its retention passes.
 * These used to be decided inside the object; here they are pure rules over the run's facts and
 * the clock, so they are tested in Node (test/run/lifecycle/run-plan.test.ts) and the object only performs
 * them (docs/architecture.md, "The run lifecycle").
 *
 * Why these times (docs/operations.md, "What a run costs"): a run is written when something must
 * outlive its object's memory. Until then no alarm exists, and a timer stands in for it at the
 * deadline or when the listing is due to see the run (FIRST_WRITE_MS after it started), whichever
 * is first. A written active run's alarm comes at its next wake-up (deadline, approval timeout,
 * wait, heartbeat) and no later than the listing's next try. A finished run keeps one alarm only
 * while its listing entry, deliveries or slot release are owed, and none after.
 */
import type { CompiledWorkflow, JsonObject } from "../../bundle.ts";
import type { RunStatus, StepRecord } from "../../engine/types.ts";
import type { FlowGate } from "../keys/flow-key-rpc.ts";
import type { AdmitVerdict, TurnVerdict } from "../keys/flow-key-types.ts";
import { FLUSH_WINDOW_MS, listKey, RIDE_WINDOW_MS } from "../listing/listing-layout.ts";
import { flowKeys, flowOf, type RunDoc } from "../run-doc.ts";
import { runGraph } from "../run-graph.ts";

/** While a run is active the alarm wakes the object at least this often (to resume after eviction). */
export const HEARTBEAT_MS = 60_000;
/**
 * A run still active this long after it started is written (if nothing has written it yet) and
 * listed, by its wake-up; a run that finishes sooner is listed once, finished.
 */
export const FIRST_WRITE_MS = 2_000;
/** Until the listing has acknowledged a run's status, its alarm retries this often (doubling, capped). */
export const LISTING_RETRY_MS = 3_000;
/**
 * The back-off stops here: however long a shard has been failing, the run tries again within
 * this time, so once the shard answers the listing catches up well inside the 10 s lag the API
 * promises (the envelope stays the source of truth meanwhile).
 */
export const LISTING_RETRY_MAX_MS = 5_000;
/**
 * A finished run's guard: its alarm this long after its end (in the commit of its last write). By
 * then its listing shard has written the entry (sent after the answer, at most RIDE_WINDOW_MS later
 * when it rode with other runs' entries, then written within FLUSH_WINDOW_MS): the run asks once
 * more unless it has heard the batch written, and has nothing left. A write that failed, or a
 * carrier that never sent, is tried again then.
 */
export const LISTING_GUARD_MS = FLUSH_WINDOW_MS + RIDE_WINDOW_MS + 600;

/** An effect outside the run's own storage: the object performs it and reports how it went. */
export type RunEffect =
  /** Report the run's status to the run listing (answer: `listed`). */
  | { type: "list" }
  /** Give back what the run holds in its flow keys: a slot, a place, a cancel_on watch (answer: `release`). */
  | { type: "release"; gates: string[] }
  /** Make the delivery attempts due now (answer: `deliver`, with when the next one is due). */
  | { type: "deliver" }
  /** A queued run asks the flow key it waits at whether it may go on (answer: `ask_turn`). */
  | { type: "ask_turn"; gate: FlowGate; admit: boolean; priority: number; params: JsonObject }
  /** A keyed wait registers with its key's object, which may hand it a kept signal. */
  | { type: "register_wait"; name: string; key: string }
  /** Send the run's spans waiting for export, or try a failed batch again (answer: `export`). */
  | { type: "export" }
  /** Write the run's one `run.finished` log line. */
  | { type: "log" }
  /** Ask the run's judges (docs/file-format.md, "Scores"; answer: `judge`). */
  | { type: "judge" }
  /** The run's retention passed: its storage goes. */
  | { type: "delete" };

/**
 * When an effect starts: `now` (a keyed wait registers at once, as a sender may signal as soon as
 * it hears of the run; a queued run asks its key), `soon` (the next turn: a flow key's slot goes
 * back before the next invoke of the key arrives, a delivery), or after the `answer` has left: the
 * log line, the listing write and the spans' export are CPU on the thread that also carries the
 * answer back (one thread per workerd process: `npm start`, and a busy machine at the edge);
 * bench/paths-results.md and bench/traces-results.md measure what they cost.
 */
export function effectTiming(e: RunEffect): "now" | "soon" | "answer" {
  if (e.type === "register_wait" || e.type === "ask_turn") return "now";
  return e.type === "log" || e.type === "list" || e.type === "export" || e.type === "judge"
    ? "answer"
    : "soon";
}

export { AFTER_ANSWER_MS, afterAnswerMs } from "../after-answer.ts";

/** What an effect reported back. */
export type EffectResult =
  /** `durableAt`: the shard lists the entry now and writes it by then (ask again); null: written. */
  | { type: "list"; key: string; ok: boolean; durableAt?: number | null }
  | { type: "release"; ok: boolean }
  | { type: "deliver"; next: number | null }
  /** `next`: when a batch the collector did not take is tried again (null: none waits). */
  | { type: "export"; next: number | null }
  /** The judges answered, or were given up for now (`done` false: asked again later). */
  | { type: "judge"; done: boolean }
  | { type: "ask_turn"; gate: string; verdict: AdmitVerdict | TurnVerdict };

/** A wake-up: by the object's alarm (`durable`, in the commit of the run's writes) or, before the run is written, a timer. */
export interface Wake {
  at: number;
  durable: boolean;
}

/** What the plan reads of the run. */
export interface RunFacts {
  status: RunStatus;
  createdMs: number;
  deadlineMs: number;
  /** The run has been written (false: it lives in memory only so far). */
  stored: boolean;
  /** The run's own next wake-up (deadline, approvals, waits, heartbeat), or null. */
  next: number | null;
  /** Its flow keys (released at its end); none: []. */
  gates: string[];
  /** It has deliveries (notifications for its final status, approval requests). */
  delivers: boolean;
  /** What its listing entry should say: its status, and once it has ended its deliveries' counts. */
  listKey: string;
  /** Spans wait for export now (run-trace.ts). */
  exports: boolean;
  /** While its compensation phase runs: when the heartbeat wakes it (an eviction resumes it); else null. */
  compensatingUntil: number | null;
  /** Judges are due after its answer (docs/file-format.md, "Scores"). */
  judges: boolean;
}

const TERMINAL: ReadonlySet<RunStatus> = new Set(["complete", "failed", "canceled"]);
/** Listing keys of an active run: shown is enough (its final write is the one made durable). */
const ACTIVE_KEYS: ReadonlySet<string> = new Set(["queued", "pending", "running"]);

/**
 * The facts of a run (`next`: its own next wake-up, from the lifecycle; `deliveries`: how many it
 * has and how many failed, null when it has none).
 */
export function runFacts(
  doc: RunDoc,
  stored: boolean,
  next: number | null,
  deliveries: { total: number; failed: number } | null,
  exports = false,
  compensatingUntil: number | null = null,
  judges = false,
): RunFacts {
  const status = doc.status;
  return {
    status,
    createdMs: Date.parse(doc.created_at),
    deadlineMs: Date.parse(doc.deadline),
    stored,
    next,
    gates: flowKeys(flowOf(doc)),
    delivers: deliveries !== null,
    listKey: listKey(status, deliveries, doc.compensation?.status ?? null),
    exports,
    compensatingUntil,
    judges,
  };
}

/** When a finished run's storage goes (null: it is active, or kept for ever). */
export function expiresAt(
  doc: { status: RunStatus; finished_at: string | null; created_at: string },
  retentionMs: number | null,
): number | null {
  if (retentionMs === null || !TERMINAL.has(doc.status)) return null;
  return Date.parse(doc.finished_at ?? doc.created_at) + retentionMs;
}

/**
 * When an active run must next be woken: its deadline, the earliest approval timeout or wait
 * (`due`), and — only while a step is working (`working`), and only where the run can be evicted
 * (`heartbeatMs`) — the heartbeat that resumes it. A queued run has no deadline yet: the
 * heartbeat asks its key again.
 */
export function nextWakeAt(
  doc: { status: RunStatus; deadline: string },
  due: number | null,
  heartbeatMs: number | null,
  working: () => boolean,
  now: number,
): number | null {
  if (doc.status === "queued") return heartbeatMs === null ? null : now + heartbeatMs;
  const next = Math.min(Date.parse(doc.deadline), due ?? Number.POSITIVE_INFINITY);
  return heartbeatMs !== null && working() ? Math.min(next, now + heartbeatMs) : next;
}

/** The after-run effects that report back. */
type Owed = "list" | "deliver" | "release" | "export" | "judge";

export class RunPlan {
  /** What the run listing has acknowledged (`listKey`; memory only: after a wake-up it is sent again). */
  private listed: string | null = null;
  /** The listing shows `listed` but writes it only by then: a finished run asks again (null: written). */
  private durableAt: number | null = null;
  private listFailures = 0;
  private released = false;
  /** When the next delivery attempt is due (null: none left, or none known yet). */
  private deliverNext: number | null = null;
  /** When a span batch the collector did not take is tried again (null: none waits). */
  private exportNext: number | null = null;
  /** After-run effects performed and not reported yet. */
  private owed = new Set<Owed>();
  /** The wake-up the object has armed (null: none, or unknown after an eviction). */
  private armed: Wake | null = null;

  /** Whether the listing says this of the run (`listKey`); a finished run's entry only once it is written. */
  listedAs(key: string): boolean {
    return this.listed === key && (this.durableAt === null || ACTIVE_KEYS.has(key));
  }

  // ---- results of effects -----------------------------------------------------------------

  /** A listing, release or delivery result. */
  record(r: Exclude<EffectResult, { type: "ask_turn" }>): void {
    if (r.type === "list") this.listResult(r.key, r.ok, r.durableAt ?? null);
    else if (r.type === "release") this.releaseResult(r.ok);
    else if (r.type === "export") this.exportNext = r.next;
    else if (r.type === "deliver") this.deliverResult(r.next);
  }

  listResult(key: string, ok: boolean, durableAt: number | null = null): void {
    if (ok) {
      this.listed = key;
      this.durableAt = durableAt;
      this.listFailures = 0;
    } else {
      this.listFailures += 1;
    }
  }

  releaseResult(ok: boolean): void {
    if (ok) this.released = true;
  }

  deliverResult(next: number | null): void {
    this.deliverNext = next;
  }

  /** How long until the next try of a listing write that failed. */
  listingRetryMs(): number {
    return Math.min(LISTING_RETRY_MAX_MS, LISTING_RETRY_MS * 2 ** Math.max(0, this.listFailures - 1));
  }

  // ---- active run -------------------------------------------------------------------------

  /**
   * The wake-up of an active run at `now`: before its first write a timer, at its deadline or
   * when the listing is due to see it; after it, the alarm at its next wake-up, and no later than
   * the listing's next try (FIRST_WRITE_MS after the start until the listing has it, then the
   * back-off after a failed write).
   */
  activeWake(f: RunFacts, now: number, listingTried: boolean): Wake | null {
    const retry = this.exportNext ?? Number.POSITIVE_INFINITY;
    if (!f.stored) return { at: Math.min(f.deadlineMs, f.createdMs + FIRST_WRITE_MS, retry), durable: false };
    if (f.next === null && this.exportNext === null) return null;
    let at = Math.min(f.next ?? Number.POSITIVE_INFINITY, retry);
    if (!this.listedAs(f.listKey)) {
      const retry =
        listingTried && this.listFailures > 0 ? now + this.listingRetryMs() : f.createdMs + FIRST_WRITE_MS;
      at = Math.min(at, retry);
    }
    return { at, durable: true };
  }

  /** The status changed while the run is active: a listing that showed it queued or pending hears at once. */
  statusChanged(): RunEffect[] {
    return this.listed === "pending" || this.listed === "queued" ? [{ type: "list" }] : [];
  }

  // ---- finished run -----------------------------------------------------------------------

  /**
   * The run just ended: one alarm LISTING_GUARD_MS away guards what is owed after the answer (it
   * rides in the commit of the run's last write), unless one due sooner serves already.
   */
  endWake(now: number): Wake | null {
    if (this.armed?.durable && this.armed.at <= now + LISTING_GUARD_MS) return null;
    return { at: now + LISTING_GUARD_MS, durable: true };
  }

  /** What a finished run owes after its answer: the log line (`first`), its listing, deliveries, slot. */
  owedAfterRun(f: RunFacts, first: boolean): RunEffect[] {
    const out: RunEffect[] = [];
    if (first) out.push({ type: "log" });
    if (!this.listedAs(f.listKey)) out.push({ type: "list" });
    if (f.delivers) out.push({ type: "deliver" });
    if (f.gates.length > 0 && !this.released) out.push({ type: "release", gates: f.gates });
    if (f.exports) out.push({ type: "export" });
    if (f.judges) out.push({ type: "judge" });
    return out;
  }

  /** After-run effects go out; each reports back through its result. False: nothing is owed. */
  owe(effects: readonly RunEffect[]): boolean {
    for (const e of effects)
      if (
        e.type === "list" ||
        e.type === "deliver" ||
        e.type === "release" ||
        e.type === "export" ||
        e.type === "judge"
      )
        this.owed.add(e.type);
    return this.owed.size > 0;
  }

  /** An after-run effect reported back; true when nothing more is owed (its last wake-up may be armed). */
  paidFor(type: Owed): boolean {
    this.owed.delete(type);
    return this.owed.size === 0;
  }

  /**
   * Once everything owed after the run has reported: the next delivery attempt, and a retry
   * soon while the listing or the slot is still owed; null when nothing more is due (the alarm is
   * deleted: the listing's shard ends the run's retention).
   */
  afterRunWake(f: RunFacts, now: number): Wake | null {
    let next = f.delivers ? this.deliverNext : null;
    if (this.exportNext !== null) next = Math.min(next ?? Number.POSITIVE_INFINITY, this.exportNext);
    // A compensation phase under way: the heartbeat resumes it after an eviction.
    if (f.compensatingUntil !== null) next = Math.min(next ?? Number.POSITIVE_INFINITY, f.compensatingUntil);
    const unwritten = this.listed === f.listKey && this.durableAt !== null;
    if (unwritten) {
      // Shown, not written yet: ask again once the shard has written it. The guard armed at the
      // run's end serves when it comes after that (arming again would be one more row).
      const armed = this.armed;
      const at = (this.durableAt as number) + 500;
      const keep = armed?.durable && armed.at >= at && armed.at <= at + LISTING_GUARD_MS;
      next = Math.min(next ?? Number.POSITIVE_INFINITY, keep && armed ? armed.at : at);
    }
    const stillOwed =
      (!this.listedAs(f.listKey) && !unwritten) || (f.gates.length > 0 && !this.released) || f.judges;
    if (stillOwed) next = Math.min(next ?? Number.POSITIVE_INFINITY, now + this.listingRetryMs());
    return next === null ? null : { at: Math.max(next, now), durable: true };
  }

  // ---- the armed wake-up ------------------------------------------------------------------

  /** Whether `w` is the wake-up armed already (arming it again would be one more storage write). */
  isArmed(w: Wake | null): boolean {
    const a = this.armed;
    return w === null ? a === null : a !== null && a.at === w.at && a.durable === w.durable;
  }

  /** The object armed `w` (null: none). */
  armedAt(w: Wake | null): void {
    this.armed = w;
  }

  /** The alarm fired (nothing is armed until the next wake-up is set). */
  fired(): void {
    this.armed = null;
  }

  /** The run's storage was cleared: nothing is owed or known any more. */
  reset(): void {
    this.listed = null;
    this.durableAt = null;
    this.listFailures = 0;
    this.released = false;
    this.deliverNext = null;
    this.exportNext = null;
    this.owed.clear();
    this.armed = null;
  }

  /** Forget what the listing acknowledged (it asked the run to report again). */
  relist(): void {
    this.listed = null;
  }
}

/**
 * Whether a step other than a workflow step (whose children say it) is running, or the run has
 * not started one yet: only then does the heartbeat wake the run (a run whose steps all wait for
 * a human or a signal sleeps until a decision, a signal, a timeout or its deadline).
 */
export function isWorking(
  doc: RunDoc,
  wf: CompiledWorkflow,
  records: ReadonlyMap<string, StepRecord>,
): boolean {
  if (doc.status === "pending") return true;
  const workflowSteps = new Set<string>();
  for (const n of runGraph(doc.def, wf)) if (n.kind === "workflow") workflowSteps.add(n.path);
  let any = false;
  for (const [path, rec] of records) {
    if (rec.status === "pending_approval" || rec.status === "waiting") any = true;
    if (rec.status === "running" && !workflowSteps.has(path)) return true;
  }
  // Nothing running and nothing waiting: a step is about to start (or the engine is off), keep the heartbeat.
  return !any;
}

/** Whether a status is final. */
export function isTerminal(status: RunStatus): boolean {
  return TERMINAL.has(status);
}
