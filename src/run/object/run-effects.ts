/**
 * The effects a run's lifecycle (lifecycle.ts) asks its Durable Object to perform, performed: the
 * listing write, notifications, the concurrency slot's release, a flow key's turn, a keyed wait's
 * registration, the span export, the log line, deletion. Each starts when run-plan.ts's
 * `effectTiming` says, and reports back to the lifecycle, which decides what comes next. Nothing
 * here decides (docs/architecture.md, "Two shells").
 */
import type { Residency } from "../../bundle.ts";
import { signalKeyStub } from "../keys/signal-key-rpc.ts";
import type { RunLifecycle } from "../lifecycle/lifecycle.ts";
import { afterAnswerMs, effectTiming, type RunEffect } from "../lifecycle/run-plan.ts";
import type { ListingWriter } from "../listing/listing-sync.ts";
import { traceOf } from "../run-doc.ts";
import { flowKeyStub } from "../run-rpc.ts";
import { sendSpans, traceExportOf } from "../trace/otlp.ts";
import { droppedSpansLog, finishedRunLog } from "./run-log.ts";

/** What the effects need of the run's object. */
export interface EffectHost {
  /** The object's env (read at each use: the workerd tests swap it). */
  env(): Env;
  readonly run: RunLifecycle;
  readonly listing: ListingWriter;
  /** The id the run is known by, and the jurisdiction it names. */
  runId(): string;
  residency(): Residency | null;
  /** Deletes the run's storage and forgets it. */
  deleteRun(): Promise<void>;
}

export class RunEffects {
  /** Effects under way: an alarm or an RPC that started them waits for them. */
  private readonly pending = new Set<Promise<unknown>>();
  private readonly host: EffectHost;

  constructor(host: EffectHost) {
    this.host = host;
  }

  /** Each effect starts when `effectTiming` says (a timer, not a microtask, after the answer). */
  perform(effects: RunEffect[]): void {
    const later = effects.filter((e) => effectTiming(e) === "answer");
    const soon = effects.filter((e) => effectTiming(e) !== "answer");
    if (soon.length > 0) {
      const now = soon.every((e) => effectTiming(e) === "now");
      this.track(now ? Promise.resolve() : new Promise<void>((resolve) => setTimeout(resolve, 0)), soon);
    }
    if (later.length > 0)
      this.track(new Promise<void>((resolve) => setTimeout(resolve, afterAnswerMs(this.host.env()))), later);
  }

  /** Resolves once every effect started so far (and any they started) is done. */
  async settled(): Promise<void> {
    while (this.pending.size > 0) await Promise.all([...this.pending]);
  }

  private track(start: Promise<void>, effects: RunEffect[]): void {
    const done = start.then(() => Promise.all(effects.map((e) => this.effect(e)))).catch(() => {});
    this.pending.add(done);
    void done.finally(() => this.pending.delete(done));
  }

  private async effect(e: RunEffect): Promise<void> {
    const { run } = this.host;
    const env = this.host.env();
    switch (e.type) {
      case "list":
        return this.host.listing.write();
      case "deliver":
        return run.deliver();
      case "release": {
        const id = this.host.runId();
        const ok = await Promise.all(
          e.gates.map((g) => flowKeyStub(env, this.host.residency(), g).release(id)),
        ).then(
          () => true,
          () => false,
        );
        return run.reported({ type: "release", ok });
      }
      case "ask_turn": {
        const key = flowKeyStub(env, this.host.residency(), e.gate.name);
        const runId = this.host.runId();
        const { name, settings, cancelOn } = e.gate;
        const ask = e.admit
          ? key.admit({ gate: name, runId, settings, priority: e.priority, params: e.params, cancelOn })
          : key.turn(runId);
        // Unreachable now: the run's heartbeat asks again.
        const verdict = await ask.catch(() => null);
        if (verdict) run.reported({ type: "ask_turn", gate: name, verdict });
        return;
      }
      case "register_wait": {
        const workflow = run.rootWorkflow().name;
        const box = signalKeyStub(env, this.host.residency(), workflow, e.name, e.key);
        const kept = await box.register(this.host.runId()).catch(() => null);
        if (kept !== null) run.signal(e.name, kept, e.key);
        return;
      }
      case "export":
        return this.exportSpans();
      case "log":
        return this.logFinished();
      case "judge":
        return run.judge();
      case "delete":
        return this.host.deleteRun();
    }
  }

  /** One `run.finished` line (run-log.ts), masked; never lets the line break the run's bookkeeping. */
  private logFinished(): void {
    const { run } = this.host;
    const doc = run.current;
    if (doc) {
      const trace = { id: traceOf(doc).id, dropped: run.trace.dropped };
      const line = finishedRunLog(doc, run.rootWorkflow(), run.stepRecords, trace);
      console.log(JSON.stringify(run.runMasker.maskJson(line)));
    }
  }

  /** One batch of the run's spans to the collector (otlp.ts); spans dropped after the log line get their own. */
  private async exportSpans(): Promise<void> {
    const config = traceExportOf(this.host.env() as unknown as Record<string, unknown>);
    const batch = this.host.run.spansToExport();
    if (!config || !batch) return;
    const ok = await sendSpans(config, batch);
    const { dropped, ended } = this.host.run.exported(ok);
    if (dropped > 0 && ended) {
      const traceId = batch[0]?.traceId ?? "";
      console.log(JSON.stringify(droppedSpansLog(this.host.runId(), traceId, dropped)));
    }
  }
}
