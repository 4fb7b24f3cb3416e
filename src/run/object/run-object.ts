/**
 * One Durable Object per run: the adapter that performs what the run lifecycle (lifecycle.ts)
 * decides. It gives the lifecycle the object's SQLite-backed KV (run-store.ts decides what is
 * written), arms the wake-ups it asks for (the object's alarm, or a timer before the run's first
 * write), serves the Worker's RPC and the event stream, and has the lifecycle's effects performed
 * (run-effects.ts: the listing write, notifications, the concurrency slot's release, a keyed
 * wait's registration, the log line, deletion when retention has passed). It decides nothing itself.
 */
import { DurableObject } from "cloudflare:workers";
import workflowBundle from "workflow-bundle";
import type { Json, Residency } from "../../bundle.ts";
import { parseTraceparent } from "../../engine/trace.ts";
import { Definitions } from "../definitions/definitions.ts";
import type { PublicDelivery } from "../deliveries/deliveries.ts";
import type { Envelope } from "../envelope.ts";
import { EventHub } from "../events/events.ts";
import { parseRunId, residencyOfRun } from "../jurisdiction.ts";
import type { BeginPayload } from "../keys/flow-key-rpc.ts";
import { objectKv } from "../kv-port.ts";
import { RunLifecycle } from "../lifecycle/lifecycle.ts";
import { HEARTBEAT_MS, type Wake } from "../lifecycle/run-plan.ts";
import { retentionMs } from "../listing/listing-layout.ts";
import { ListingWriter } from "../listing/listing-sync.ts";
import type {
  CancelCode,
  CancelResult,
  CompensateResult,
  PushOp,
  PushOutcome,
  RunView,
  SignalResult,
} from "../run-calls.ts";
import type { RerunSource, StartRequest, StartResult } from "../run-rpc.ts";
import { flowKeyStub } from "../run-rpc.ts";
import { RunStore } from "../run-store.ts";
import { admit } from "../start/admission.ts";
import { takeRateLimitSlot } from "../start/rate-limit.ts";
import { newTrace } from "../trace/run-trace.ts";
import type { ApprovalRecord, DecideResult } from "../waits/approvals.ts";
import { RunEffects } from "./run-effects.ts";
import { openingEvent, rerunSourceOf, viewOf, withGroup } from "./run-reads.ts";
import { workerRuntime } from "./worker-runtime.ts";

/** This isolate's definitions (docs/operations.md, "Definitions"): the code's own, and those read from the store. */
const DEFINITIONS = new Definitions(workflowBundle);

export class RunObject extends DurableObject<Env> {
  private readonly run: RunLifecycle;
  private readonly hub = new EventHub();
  private readonly listing: ListingWriter;
  /** The wake-up of a run not written yet (it has no alarm). */
  private timer: ReturnType<typeof setTimeout> | null = null;
  /** An alarm may be set (a stored run's, or one this incarnation set): only then is one deleted. */
  private alarmSet = false;
  private readonly effects: RunEffects;
  /** Its caller carries the entry of a run that ends before its answer (run-rpc.ts, `StartRequest.carried`). */
  private carried = false;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    const runtime = workerRuntime(env);
    const store = new RunStore(
      objectKv(ctx.storage),
      DEFINITIONS.portFor(() => this.residency),
    );
    this.run = new RunLifecycle(
      store,
      runtime,
      {
        wake: (w) => this.arm(w),
        perform: (effects) => this.effects.perform(effects),
        ...this.hub.news(() => this.run.current?.finished_at ?? null),
      },
      { heartbeatMs: HEARTBEAT_MS, retentionMs: retentionMs(env) },
    );
    const current = () => {
      const doc = this.run.current;
      if (!doc) return null;
      const workflow = this.run.rootWorkflow().name;
      // A finished run that is kept has an alarm that guards what its shard has not written yet.
      const guarded = !this.run.active && doc.kept !== false;
      const carried = this.carried && (doc.kept === false || this.run.endCarried);
      return {
        doc,
        workflow,
        deliveries: this.run.deliverySummary(),
        guarded,
        carried,
        scores: this.run.listedScores(),
      };
    };
    this.listing = new ListingWriter(
      () => this.env,
      current,
      (key, ok, durableAt) => this.run.reported({ type: "list", key, ok, durableAt }),
    );
    this.effects = new RunEffects({
      env: () => this.env,
      run: this.run,
      listing: this.listing,
      runId: () => this.runId,
      residency: () => this.residency,
      deleteRun: () => this.deleteRun(),
    });
    // No schema to create: the synchronous KV API keeps one row per key (DDL on a fresh database
    // was the largest fixed cost per run). Loading is synchronous: no event reaches the object
    // before it. A run pinned to a version the code no longer holds reads its definition from the
    // store first, and no event reaches the object before that either.
    const need = store.definitionNeeded();
    if (need === null) this.load();
    else
      ctx.blockConcurrencyWhile(async () => {
        await DEFINITIONS.definitionOf(env, {
          hash: need.hash,
          key: need.key,
          residency: residencyOfRun(need.runId),
        });
        this.load();
      });
  }

  private load(): void {
    this.run.load();
    this.alarmSet = this.run.current !== null;
  }

  // ---- RPC used by the Worker -------------------------------------------------------------

  async start(req: StartRequest): Promise<StartResult> {
    await this.dropIfExpired();
    const doc = this.run.current;
    // The id it is known by names this object (its jurisdiction first: jurisdiction.ts).
    const hex = this.ctx.id.toString();
    const runId = doc?.run_id ?? (req.runId && parseRunId(req.runId)?.hex === hex ? req.runId : hex);
    if (doc) {
      if (doc.body_hash !== req.bodyHash || doc.workflow_key !== req.workflowKey) {
        return { outcome: "conflict", runId };
      }
      const envelope = await this.waitFinished(req.waitMs);
      // A run that has ended, asked again by a caller that carries entries: its entry goes along
      // once more. The caller that carried it first may have died with it (a retry is how a client
      // answers a lost answer); the listing takes the same entry twice as once.
      const listing = req.carried === true && envelope !== null ? this.listing.entry() : null;
      return {
        outcome: "existing",
        runId,
        envelope,
        queued: this.run.current?.status === "queued",
        ...(listing ? { listing } : {}),
      };
    }
    const env = this.env;
    const verdict = await admit(req, {
      takeRateLimitSlot: (slot) => takeRateLimitSlot(slot, env as unknown as Record<string, unknown>),
    });
    if (verdict === "rate_limited") return { outcome: "rate_limited", runId };
    this.carried = req.carried === true;
    // The run is pinned to this deployment's definition (this module's own copy of the bundle), or
    // a re-run's; the store is asked to keep it, so that the run can keep only its version.
    DEFINITIONS.keep(
      env,
      parseRunId(runId)?.residency ?? null,
      req.definition ?? DEFINITIONS.ofCode(req.workflowKey),
      req.workflowKey,
    );
    this.run.start(
      {
        runId,
        bundle: req.definition ?? workflowBundle,
        workflowKey: req.workflowKey,
        params: req.params,
        request: req.request,
        bodyHash: req.bodyHash,
        idempotencyKey: req.idempotencyKey,
        origin: req.origin ?? null,
        rerun: req.rerun ?? null,
        flow: req.flow ?? null,
        // The caller's trace (a valid W3C traceparent), or a new one; a re-run's is always new.
        trace: newTrace(req.rerun ? null : parseTraceparent(req.traceparent)),
      },
      this.carried && req.waitMs > 0,
    );
    const envelope = await this.waitFinished(req.waitMs);
    const queued = (this.run.current as { status: string } | null)?.status === "queued";
    const kept = (this.run.current as { kept?: false } | null)?.kept;
    // Ended before this answer, owing nothing else: the caller carries its entry (express or not).
    const listing = this.carried && (kept === false || this.run.endCarried) ? this.listing.entry() : null;
    return { outcome: "started", runId, envelope, queued, ...(listing ? { listing } : {}) };
  }

  /** The envelope once the run has finished, or null if it is still active after `ms` (then it is written first). */
  async waitFinished(ms: number): Promise<Envelope | null> {
    if (!this.run.current) return null;
    if (this.run.active && ms > 0) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([this.run.ended(), new Promise<void>((r) => (timer = setTimeout(r, ms)))]);
      if (timer !== undefined) clearTimeout(timer);
    }
    if (!this.run.current) return null;
    this.run.answering();
    return this.run.active ? null : this.run.envelope();
  }

  /**
   * GET /runs/{id}/events (the Worker has checked credentials): Server-Sent Events; from the
   * `Last-Event-ID` on, when the client sends one. `?opening=1`: an invoke's own stream, which
   * opens with `run.started` (`run.queued` for a queued run) (docs/http-api.md, "Streaming").
   */
  override async fetch(request: Request): Promise<Response> {
    await this.dropIfExpired();
    if (!this.run.current) return new Response("no run", { status: 404 });
    const last = Number.parseInt(request.headers.get("last-event-id") ?? "", 10);
    const opening = new URL(request.url).searchParams.has("opening") ? openingEvent(this.run) : undefined;
    // A finished run whose compensations still run keeps its stream open until they have.
    return this.hub.subscribe(this.run.history(), !this.run.active && !this.run.compensating, {
      ...(opening ? { opening } : {}),
      ...(Number.isSafeInteger(last) && last > 0 ? { skip: last } : {}),
    });
  }

  async view(): Promise<RunView | null> {
    await this.dropIfExpired();
    const view = viewOf(this.run);
    return view ? withGroup(this.run, view, (gate) => flowKeyStub(this.env, this.residency, gate)) : null;
  }

  async cancel(code?: CancelCode): Promise<CancelResult> {
    await this.dropIfExpired();
    return this.run.cancel(code);
  }

  /** POST /runs/{id}/compensate: every failed compensation once more. */
  async compensate(): Promise<CompensateResult> {
    await this.dropIfExpired();
    return this.run.compensate();
  }

  /** A flow key says the queued run may go on (with a debounce's or batch's params). */
  async begin(payload?: BeginPayload): Promise<boolean> {
    await this.dropIfExpired();
    return this.run.begin(payload ?? null);
  }

  async rerunSource(): Promise<RerunSource> {
    await this.dropIfExpired();
    return rerunSourceOf(this.run);
  }

  async rerunStarted(runId: string, once: boolean): Promise<"claimed" | "already" | "not_found" | "active"> {
    await this.dropIfExpired();
    return this.run.rerunStarted(runId, once);
  }

  /** An A2A task's push configs (docs/a2a.md, "Push notifications"). */
  async pushConfigs(op: PushOp): Promise<PushOutcome> {
    await this.dropIfExpired();
    return this.run.pushConfigs(op);
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

  /** The run's deliveries (null: no such run). */
  async deliveries(): Promise<PublicDelivery[] | null> {
    await this.dropIfExpired();
    return this.run.deliveries();
  }

  /** One attempt more of delivery `id`, now (null: the run has no such delivery). */
  async retryDelivery(id: string): Promise<PublicDelivery | null> {
    await this.dropIfExpired();
    return this.run.retryDelivery(id);
  }

  /** Each failed delivery created at or after `since` (epoch ms) is attempted once more; how many. */
  async recoverDeliveries(since: number): Promise<number> {
    await this.dropIfExpired();
    return this.run.recoverDeliveries(since);
  }

  async remove(): Promise<"deleted" | "active" | "not_found"> {
    await this.dropIfExpired();
    if (!this.run.current) return "not_found";
    if (this.run.active) return "active";
    await this.deleteRun();
    return "deleted";
  }

  /** The run's listing shard, once its hour has passed retention, asks each of its runs to go. */
  async expire(): Promise<"deleted" | "kept" | "gone"> {
    const outcome = this.run.expire(Date.now());
    if (outcome !== "delete") return outcome;
    await this.deleteRun();
    return "deleted";
  }

  /** The listing's legacy index asks runs it knew to report themselves (src/run/listing/run-index.ts). */
  async relist(): Promise<void> {
    this.run.relist();
    await this.effects.settled();
  }

  override async alarm(): Promise<void> {
    this.run.alarm(Date.now());
    await this.effects.settled();
  }

  // ---- performing the lifecycle's decisions -----------------------------------------------

  /** Arms a wake-up: the alarm once the run is written (in the commit of its writes), else a timer. */
  private arm(w: Wake | null): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    if (w === null) {
      // A run that never set one (ended before anything of it outlived a timer) deletes none.
      if (this.alarmSet) this.ctx.storage.deleteAlarm().catch(() => {});
      this.alarmSet = false;
    } else if (w.durable) {
      this.alarmSet = true;
      this.ctx.storage.setAlarm(w.at).catch(() => {});
    } else {
      this.timer = setTimeout(
        () => {
          this.timer = null;
          this.run.alarm(Date.now());
        },
        Math.max(0, w.at - Date.now()),
      );
    }
  }

  /** The id the run is known by: its jurisdiction, if any, then its object's hex id. */
  private get runId(): string {
    return this.run.current?.run_id ?? this.ctx.id.toString();
  }

  /** Where the run's key objects are: the jurisdiction its id names. */
  private get residency(): Residency | null {
    return residencyOfRun(this.runId);
  }

  /** A finished run past retention is gone for every reader, even before its shard says so. */
  private async dropIfExpired(): Promise<void> {
    if (this.run.expired(Date.now())) await this.deleteRun();
  }

  private async deleteRun(): Promise<void> {
    await this.ctx.storage.deleteAll();
    this.alarmSet = false;
    this.run.forget();
  }
}
