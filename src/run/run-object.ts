/**
 * One Durable Object per run: a shell over the run lifecycle (lifecycle.ts). It gives the
 * lifecycle the object's SQLite-backed KV (run-store.ts decides what is written), wakes it with
 * the object's alarm (so the deadline holds even if the object was evicted, and a run evicted
 * mid-step resumes on the next wake-up), serves its RPC and event stream, and does what only a
 * deployed run does after it ends: reports itself to the run listing (listing-sync.ts), logs
 * one line, and is deleted when its retention passes.
 */
import { DurableObject } from "cloudflare:workers";
import workflowBundle from "workflow-bundle";
import type { Json, JsonObject } from "../bundle.ts";
import { systemClock } from "../engine/clock.ts";
import type { RunHost } from "../engine/scheduler.ts";
import type { StepRecord } from "../engine/types.ts";
import { executors } from "../steps/index.ts";
import type { ApprovalRecord, DecideResult } from "./approvals.ts";
import { concurrencyKeyStub } from "./concurrency-key-rpc.ts";
import type { Envelope, RunDoc } from "./envelope.ts";
import { approvalEvent, EventHub, stepEvent } from "./events.ts";
import { type CancelResult, RunLifecycle, type RunView, type SignalResult } from "./lifecycle.ts";
import { retentionMs } from "./listing-layout.ts";
import { LISTING_RETRY_MS, ListingSync } from "./listing-sync.ts";
import { MAX_OUTBOUND, OutboundLimiter } from "./outbound.ts";
import { takeRateLimitSlot } from "./rate-limit.ts";
import { finishedRunLog } from "./run-log.ts";
import { RunNotifier } from "./run-notifications.ts";
import type { RerunSource, StartRequest, StartResult } from "./run-rpc.ts";
import { isFinished, type KvPort, RunStore } from "./run-store.ts";
import { signalKeyStub } from "./signal-key-rpc.ts";
import { mcpToolHost } from "./tool-host.ts";

/** While a run is active the alarm wakes the object at least this often (to resume after eviction). */
const HEARTBEAT_MS = 60_000;
/**
 * A run still active this long after it started is written to its storage (if nothing has
 * written it yet) and to the listing, by its alarm; a run that finishes sooner is listed once,
 * finished.
 */
const LISTING_FIRST_WRITE_MS = 2_000;

export class RunObject extends DurableObject<Env> {
  private readonly run: RunLifecycle;
  private readonly store: RunStore;
  private readonly hub = new EventHub();
  private readonly listing: ListingSync;
  private readonly notifier: RunNotifier;
  /** This incarnation gave the run's concurrency slot back (after an eviction it is given again: harmless). */
  private released = false;
  /** When the alarm this incarnation set will fire (null: unknown or none). */
  private alarmAt: number | null = null;
  /** Ends a run not written yet at its deadline, or writes it LISTING_FIRST_WRITE_MS after it started (then its alarm lists it). */
  private persistTimer: ReturnType<typeof setTimeout> | null = null;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    const kv = ctx.storage.kv;
    const port: KvPort = {
      get: (key) => kv.get<string>(key),
      put: (key, value) => kv.put(key, value),
      delete: (key) => void kv.delete(key),
      list: (prefix) => kv.list<string>({ prefix }),
    };
    // The run's first write arms the alarm in the same commit (see armAlarm).
    const store = new RunStore(port, () => this.armAlarm());
    this.store = store;
    const allowPrivate = env.ALLOW_PRIVATE_WEBHOOKS === "true";
    const limiter = new OutboundLimiter(MAX_OUTBOUND);
    const outbound = (input: string | Request, init?: RequestInit) =>
      limiter.run(() => fetch(input, init), init?.signal ?? undefined);
    this.run = new RunLifecycle(
      store,
      {
        env: env as unknown as Record<string, unknown>,
        executors,
        fetch: outbound,
        tools: mcpToolHost(outbound, allowPrivate),
        ai: (env as unknown as { AI?: RunHost["ai"] }).AI,
        clock: systemClock,
        outboundLimit: MAX_OUTBOUND,
        allowPrivate,
        notifyFetch: (input, init) => fetch(input, init),
      },
      {
        rearm: () => this.armAlarm(),
        stepChanged: (path, rec) => this.publishStep(path, rec),
        approvalEvent: (type, approval) => {
          if (this.hub.listening) this.hub.publish(approvalEvent(type, approval));
        },
        statusChanged: () => this.listing.statusChanged(),
        finished: (doc, records) => this.finished(doc, records),
      },
      {
        heartbeatMs: HEARTBEAT_MS,
        // A keyed wait registers with its key's object, which may hand it a signal kept there.
        waitStarted: (rec) => {
          if (rec.kind !== "signal" || rec.key === null || rec.name === null || rec.status !== "waiting")
            return;
          const { name, key } = rec;
          const runId = this.ctx.id.toString();
          const box = signalKeyStub(this.env, this.run.rootWorkflow().name, name, key);
          this.ctx.waitUntil(
            box
              .register(runId)
              .then((kept) => {
                if (kept !== null) this.run.signal(name, kept, key);
              })
              .catch(() => {}),
          );
        },
      },
    );
    this.listing = new ListingSync(
      () => this.env,
      () => {
        const doc = this.run.current;
        return doc ? { doc, workflow: this.run.rootWorkflow().name } : null;
      },
    );
    this.notifier = new RunNotifier({
      kv: port,
      env: () => this.env as unknown as Record<string, unknown>,
      run: () => {
        const doc = this.run.current;
        return doc ? { doc, workflow: this.run.rootWorkflow(), masker: this.run.runMasker } : null;
      },
      fetch: (input, init) => fetch(input, init),
      allowPrivate,
      now: () => Date.now(),
    });
    // No schema to create: the synchronous KV API keeps one row per key (DDL on a fresh database
    // was the largest fixed cost per run).
    ctx.blockConcurrencyWhile(async () => this.run.load());
  }

  // ---- RPC used by the Worker -------------------------------------------------------------

  async start(req: StartRequest): Promise<StartResult> {
    const runId = this.ctx.id.toString();
    await this.dropIfExpired();
    const doc = this.run.current;
    if (doc) {
      if (doc.body_hash !== req.bodyHash || doc.workflow_key !== req.workflowKey) {
        return { outcome: "conflict", runId };
      }
      return { outcome: "existing", runId, envelope: await this.waitFinished(req.waitMs) };
    }
    if (
      req.rateLimit &&
      !(await takeRateLimitSlot(req.rateLimit, this.env as unknown as Record<string, unknown>))
    ) {
      return { outcome: "rate_limited", runId };
    }
    // Per-key concurrency: the key's object says whether the run starts now or waits its turn.
    let queued = false;
    if (req.concurrency) {
      const gate = concurrencyKeyStub(this.env, req.concurrency.gate);
      queued = (await gate.admit(runId, req.concurrency.limit)) === "queued";
    }
    // The run is pinned to this deployment's definition (this module's own copy of the bundle).
    this.run.start({
      runId,
      bundle: req.definition ?? workflowBundle,
      workflowKey: req.workflowKey,
      params: req.params,
      request: req.request,
      bodyHash: req.bodyHash,
      idempotencyKey: req.idempotencyKey,
      origin: req.origin ?? null,
      rerun: req.rerun ?? null,
      concurrency: req.concurrency ? { ...req.concurrency, queued } : null,
    });
    // The deadline alarm (SPEC 3) comes with the run's first write: a run that finishes before
    // its answer leaves is first written finished and needs none; one still active when it
    // answers, or at its first checkpoint, is written then, alarm included (docs/operations.md).
    // While the caller waits, a run not written yet has no alarm: this timer stands in for it,
    // at its deadline or when the listing is due to see it, whichever comes first.
    const begun = this.run.current as RunDoc | null;
    if (begun && this.run.active && req.waitMs > 0) {
      const due = Math.min(Date.parse(begun.deadline), Date.parse(begun.created_at) + LISTING_FIRST_WRITE_MS);
      if (due < Date.now() + req.waitMs) {
        this.persistTimer = setTimeout(() => {
          this.persistTimer = null;
          this.run.wake(); // past its deadline: the run ends here
          this.run.persist();
        }, due - Date.now());
      }
    }
    return { outcome: "started", runId, envelope: await this.waitFinished(req.waitMs) };
  }

  /**
   * The envelope once the run has finished, or null if it is still active after `ms`. A run still
   * active is written before that answer leaves (the output gate holds it until the write lands):
   * whoever was told it exists can find it after an eviction, and its deadline holds.
   */
  async waitFinished(ms: number): Promise<Envelope | null> {
    if (!this.run.current) return null;
    if (this.run.active && ms > 0) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([this.run.ended(), new Promise<void>((r) => (timer = setTimeout(r, ms)))]);
      if (timer !== undefined) clearTimeout(timer);
    }
    if (!this.run.current) return null;
    if (this.run.active) {
      this.stopPersistTimer();
      this.run.persist();
      return null;
    }
    return this.run.envelope();
  }

  /** GET /runs/{id}/events (the Worker has checked credentials): Server-Sent Events. */
  override async fetch(_request: Request): Promise<Response> {
    await this.dropIfExpired();
    if (!this.run.current) return new Response("no run", { status: 404 });
    return this.hub.subscribe(this.run.history(), !this.run.active);
  }

  async view(): Promise<RunView | null> {
    await this.dropIfExpired();
    return this.run.view();
  }

  async cancel(): Promise<CancelResult> {
    await this.dropIfExpired();
    return this.run.cancel();
  }

  async begin(): Promise<boolean> {
    await this.dropIfExpired();
    return this.run.begin();
  }

  async rerunSource(): Promise<RerunSource> {
    await this.dropIfExpired();
    const doc = this.run.current;
    if (!doc) return { outcome: "not_found" };
    if (!isFinished(doc)) return { outcome: "active" };
    return {
      outcome: "finished",
      status: doc.status as "complete" | "failed" | "canceled",
      def: doc.def,
      workflowKey: doc.workflow_key,
      params: doc.params as JsonObject,
      request: (doc.request ?? { headers: {} }) as JsonObject,
      records: [...this.run.stepRecords],
    };
  }

  async rerunStarted(runId: string, once: boolean): Promise<"claimed" | "already" | "not_found" | "active"> {
    await this.dropIfExpired();
    return this.run.rerunStarted(runId, once);
  }

  /** POST /runs/{id}/signals/{name}, or a keyed signal handed on by its key's object. */
  async signal(name: string, body: Json, key: string | null = null): Promise<SignalResult> {
    await this.dropIfExpired();
    return this.run.signal(name, body, key);
  }

  async approvals(): Promise<ApprovalRecord[] | null> {
    await this.dropIfExpired();
    return this.run.approvals();
  }

  async decide(
    target: { id: string } | { step: string },
    decision: "approved" | "rejected",
    comment: string | null,
  ): Promise<DecideResult> {
    await this.dropIfExpired();
    return this.run.decide(target, decision, comment);
  }

  async remove(): Promise<"deleted" | "active" | "not_found"> {
    await this.dropIfExpired();
    if (!this.run.current) return "not_found";
    if (this.run.active) return "active";
    await this.deleteRun();
    return "deleted";
  }

  /**
   * Retention: the run's listing shard, when its hour has passed retention, asks each of its runs
   * to go (src/run/run-index.ts), so a finished run needs no alarm of its own for it (one storage
   * write less per run). A run whose retention was raised since keeps itself with its own alarm.
   */
  async expire(): Promise<"deleted" | "kept" | "gone"> {
    const doc = this.run.current;
    if (!doc) return "gone";
    if (!isFinished(doc)) return "kept";
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
    this.listing.reset();
    await this.listing.sync();
  }

  // ---- Alarm: deadline, heartbeat, approval timeouts, listing retries ---------------------

  override async alarm(): Promise<void> {
    this.alarmAt = null;
    const doc = this.run.current;
    if (!doc) return;
    if (isFinished(doc)) {
      // Runs from before the sharded listing kept their retention alarm; it still ends them.
      if (Date.now() >= this.expiresAt(doc)) await this.deleteRun();
      else await this.afterRun();
      return;
    }
    if (doc.status === "queued" && doc.concurrency) {
      // Still queued: ask the key's object again (a begin that never arrived is not lost).
      const gate = concurrencyKeyStub(this.env, doc.concurrency.gate);
      const turn = await gate.admit(this.ctx.id.toString(), doc.concurrency.limit).catch(() => "queued");
      if (turn === "start") this.run.begin();
    }
    this.run.wake();
    if (!this.run.active) return; // the deadline ended it: finished() set what comes next
    // A run still active is listed (as running) by now; a failed write comes back soon.
    const listed = await this.listing.sync();
    const next = this.run.nextWake(Date.now()) ?? Date.now() + HEARTBEAT_MS;
    await this.setAlarmAt(listed ? next : Math.min(next, Date.now() + this.listing.retryMs()));
  }

  /**
   * The alarm of an active run that has been written: its next wake-up, and no later than when
   * the listing is due to see it (LISTING_FIRST_WRITE_MS after it started, unless the listing
   * has its status). Called at the run's first write (same commit) and whenever a wake-up moves.
   */
  private armAlarm(): void {
    const doc = this.run.current;
    if (!doc || !this.run.active || !this.store.isStored) return;
    let next = this.run.nextWake(Date.now());
    if (next === null) return;
    if (!this.listing.acknowledged(doc.status))
      next = Math.min(next, Date.parse(doc.created_at) + LISTING_FIRST_WRITE_MS);
    this.setAlarmAt(next).catch(() => {});
  }

  /** setAlarm, remembering when it will fire. */
  private setAlarmAt(at: number): Promise<void> {
    this.alarmAt = at;
    return this.ctx.storage.setAlarm(at);
  }

  // ---- After the run: listing, log line, retention -------------------------------------------

  private stopPersistTimer(): void {
    if (this.persistTimer !== null) clearTimeout(this.persistTimer);
    this.persistTimer = null;
  }

  private finished(doc: RunDoc, records: ReadonlyMap<string, StepRecord>): void {
    this.stopPersistTimer();
    const now = Date.now();
    // The listing write waits for the answer to leave (a timer, not a microtask); an alarm due
    // within LISTING_RETRY_MS retries it if this incarnation does not get there. It rides in the
    // commit of the run's last write; an alarm already due sooner (a run written while active)
    // serves instead (no second alarm write).
    if (this.alarmAt === null || this.alarmAt > now + LISTING_RETRY_MS)
      this.setAlarmAt(now + LISTING_RETRY_MS).catch(() => {});
    setTimeout(() => {
      // The log line too waits for the answer: nothing a caller waits for depends on it.
      this.logFinished(doc, records);
      void this.afterRun().catch(() => {});
    }, 0);
    if (this.hub.listening) this.hub.publish(this.run.completedEvent());
    this.hub.close();
  }

  /** One `run.finished` line (run-log.ts), masked. */
  private logFinished(doc: RunDoc, records: ReadonlyMap<string, StepRecord>): void {
    try {
      const line = finishedRunLog(doc, this.run.rootWorkflow(), records);
      console.log(JSON.stringify(this.run.runMasker.maskJson(line)));
    } catch {
      // Never let the log line break the run's bookkeeping.
    }
  }

  /**
   * A finished run, after its answer: the listing learns its final status and its notifications
   * (run-notifications.ts) are sent. Until both are done, an alarm stays close and retries, also
   * after an eviction; once they are, nothing more is due (the listing shard ends the run's
   * retention), so the alarm is deleted: `npm run bench` measured an alarm that fires for
   * nothing as the largest single cost of a run above the floor.
   */
  private async afterRun(): Promise<void> {
    const doc = this.run.current;
    if (!doc) return;
    const [listed, , released] = await Promise.all([
      this.listing.sync(),
      this.notifier.deliver(),
      this.releaseSlot(doc),
    ]);
    if (this.run.current !== doc) return; // deleted meanwhile
    const now = Date.now();
    let next = this.notifier.nextAttempt();
    if (!listed || !released) next = Math.min(next ?? Number.POSITIVE_INFINITY, now + this.listing.retryMs());
    if (next === null) {
      this.alarmAt = null;
      await this.ctx.storage.deleteAlarm();
    } else {
      await this.setAlarmAt(Math.max(next, now));
    }
  }

  /** A run of a workflow with `invoke.concurrency` gives its slot (or its place in the queue) back once. */
  private async releaseSlot(doc: RunDoc): Promise<boolean> {
    if (!doc.concurrency || this.released) return true;
    try {
      await concurrencyKeyStub(this.env, doc.concurrency.gate).release(this.ctx.id.toString());
      this.released = true;
      return true;
    } catch {
      return false;
    }
  }

  /** A finished run past retention is gone for every reader, even before its shard says so. */
  private async dropIfExpired(): Promise<void> {
    const doc = this.run.current;
    if (doc && isFinished(doc) && Date.now() >= this.expiresAt(doc)) await this.deleteRun();
  }

  private async deleteRun(): Promise<void> {
    await this.ctx.storage.deleteAll();
    this.run.forget();
    this.listing.reset();
    this.notifier.reset();
    this.alarmAt = null;
  }

  private expiresAt(doc: RunDoc): number {
    return Date.parse(doc.finished_at ?? doc.created_at) + retentionMs(this.env);
  }

  private publishStep(path: string, rec: StepRecord): void {
    if (!this.hub.listening) return;
    const ev = stepEvent(path, rec, this.run.current?.finished_at ?? new Date().toISOString());
    if (ev) this.hub.publish(ev);
  }
}
