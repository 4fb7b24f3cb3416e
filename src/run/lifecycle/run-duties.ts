/**
 * What a run owes besides its steps, and its wake-ups: the glue between the lifecycle's facts,
 * the rules of run-plan.ts and the shell that performs them. It arms the next wake-up (never the
 * same one twice: each arming is a storage write), sends what a finished run owes after its
 * answer and, once all of it has reported back, arms its last wake-up or none.
 */
import type { RunShell } from "./lifecycle-io.ts";
import {
  type EffectResult,
  isTerminal,
  type RunEffect,
  type RunFacts,
  RunPlan,
  type Wake,
} from "./run-plan.ts";

export class RunDuties {
  private readonly plan = new RunPlan();
  private readonly shell: RunShell;
  private readonly now: () => number;
  /** The run's facts at a time (null: no run). */
  private readonly facts: (now: number) => RunFacts | null;

  constructor(shell: RunShell, now: () => number, facts: (now: number) => RunFacts | null) {
    this.shell = shell;
    this.now = now;
    this.facts = facts;
  }

  /** Whether the listing says this of the run (run-plan.ts, `listKey`). */
  listedAs(key: string): boolean {
    return this.plan.listedAs(key);
  }

  /** The run's status changed while it is active. */
  statusChanged(): void {
    const effects = this.plan.statusChanged();
    if (effects.length > 0) this.shell.perform(effects);
  }

  /** An active run's next wake-up (after a listing write was tried: its back-off). */
  rearm(listingTried = false): void {
    const now = this.now();
    const f = this.facts(now);
    if (f && !isTerminal(f.status)) this.arm(this.plan.activeWake(f, now, listingTried));
  }

  arm(w: Wake | null): void {
    if (this.plan.isArmed(w)) return;
    this.plan.armedAt(w);
    this.shell.wake(w);
  }

  /** The armed wake-up fired. */
  fired(): void {
    this.plan.fired();
  }

  /**
   * The run just ended at `now`: one alarm guards what it owes after its answer, then that goes
   * out. A run that keeps no record (`guarded` false: an express run) arms none: after an
   * eviction it would have nothing to send again.
   */
  ended(now: number, guarded = true): void {
    const guard = guarded ? this.plan.endWake(now) : null;
    if (guard) this.arm(guard);
    this.owe(true);
  }

  /** A finished run's owed effects go out (`first`: the run just ended, its log line too). */
  owe(first: boolean): void {
    const now = this.now();
    const f = this.facts(now);
    if (!f) return;
    const effects = this.plan.owedAfterRun(f, first);
    // Nothing owed at all: the run's wake-up goes now (its log line, if any, still goes out).
    if (!this.plan.owe(effects)) this.arm(this.plan.afterRunWake(f, now));
    if (effects.length > 0) this.shell.perform(effects);
  }

  /** A listing, release or delivery result. */
  reported(r: Exclude<EffectResult, { type: "ask_turn" }>): void {
    this.plan.record(r);
    const now = this.now();
    const f = this.facts(now);
    if (!f) return;
    if (!isTerminal(f.status)) {
      if (r.type === "list" || r.type === "export") this.rearm(r.type === "list");
      return;
    }
    // A delivery that failed (or was recovered) changes what the listing says: it hears now.
    if (r.type === "deliver" && !this.plan.listedAs(f.listKey)) {
      const list: RunEffect[] = [{ type: "list" }];
      this.plan.owe(list);
      this.shell.perform(list);
    }
    if (this.plan.paidFor(r.type)) this.arm(this.plan.afterRunWake(f, now));
  }

  /**
   * The compensation phase ended: the heartbeat that guarded it goes (the wake-up is what the
   * finished run still owes, or none), and its listing entry hears the phase's outcome.
   */
  compensationEnded(): void {
    const now = this.now();
    const f = this.facts(now);
    if (!f || !isTerminal(f.status)) return;
    if (!this.plan.listedAs(f.listKey)) {
      const list: RunEffect[] = [{ type: "list" }];
      this.plan.owe(list);
      this.shell.perform(list);
      return;
    }
    this.arm(this.plan.afterRunWake(f, now));
  }

  /** The listing asks the run to report itself again. */
  relist(): void {
    this.plan.relist();
    this.shell.perform([{ type: "list" }]);
  }

  /** The run's storage was cleared. */
  reset(): void {
    this.plan.reset();
  }
}
