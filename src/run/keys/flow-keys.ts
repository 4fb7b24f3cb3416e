/**
 * One Durable Object per workflow and flow key (docs/triggers.md, "Shaping bursts"): it holds what
 * flow-key-rules.ts decides over its SQLite-backed KV, and performs it — tells runs whose turn came
 * to begin (a debounce's or batch's with its params), cancels runs (`replaced`,
 * `canceled_by_signal`), and wakes at the next due time. Only workflows that declare
 * `concurrency`, `throttle`, `debounce`, `batch` or `cancel_on` ever reach one.
 *
 * Its storage outlives eviction and a killed process: a queued run's own heartbeat asks again
 * (`turn`), so a begin that never arrived is not lost. Keys written by the object that kept
 * per-key concurrency before (the class it was renamed from: `active/<run>`, `queue/<seq>`) are
 * read once into this layout.
 */
import { DurableObject } from "cloudflare:workers";
import type { JsonObject } from "../../bundle.ts";
import { objectKv } from "../kv-port.ts";
import { runStub } from "../run-rpc.ts";
import { FlowKeyRules } from "./flow-key-rules.ts";
import type { AdmitRequest, AdmitVerdict, FlowEffects, TurnVerdict } from "./flow-key-types.ts";

/** How long a run may hold a slot before the key asks whether it exists (a heartbeat of a waiting run). */
const LOST_SLOT_MS = 60_000;

export class FlowKey extends DurableObject<Env> {
  private readonly rules: FlowKeyRules;
  /** Slot holders found to exist (asked once per incarnation of this object). */
  private readonly confirmed = new Set<string>();

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    moveLegacyRows(ctx.storage);
    this.rules = new FlowKeyRules(objectKv(ctx.storage));
  }

  async admit(req: AdmitRequest): Promise<AdmitVerdict> {
    const fx = effects();
    const verdict = this.rules.admit(req, Date.now(), fx);
    this.after(fx);
    return verdict;
  }

  async turn(runId: string): Promise<TurnVerdict> {
    const fx = effects();
    const verdict = this.rules.turn(runId, Date.now(), fx);
    this.after(fx);
    if (verdict.outcome === "queued" && verdict.reason === "concurrency") await this.freeLostSlots();
    return verdict;
  }

  /**
   * A slot held for a minute by a run whose object holds no run was taken by an invoke cut off
   * between this key's answer and the run's creation (a killed Worker, no idempotency key to send
   * it again): it is given back, and the next run begins. Asked while runs wait for a slot, each
   * holder once per incarnation of this object (docs/decisions.md, "Faults at random").
   */
  private async freeLostSlots(): Promise<void> {
    const holders = this.rules
      .slotHoldersSince(Date.now() - LOST_SLOT_MS)
      .filter((id) => !this.confirmed.has(id));
    await Promise.all(
      holders.map(async (id) => {
        const view = await runStub(this.env, id)
          ?.view()
          .catch(() => undefined);
        if (view === null) await this.release(id);
        else if (view !== undefined) this.confirmed.add(id);
      }),
    );
  }

  async release(runId: string): Promise<void> {
    const fx = effects();
    this.rules.release(runId, Date.now(), fx);
    this.after(fx);
  }

  async cancelFor(signal: string): Promise<string[]> {
    const fx = effects();
    const ids = this.rules.cancelFor(signal, fx);
    // The answer says which runs were canceled: they are, by the time it leaves.
    await this.perform(fx);
    return ids;
  }

  async watch(runId: string, signals: string[]): Promise<void> {
    this.rules.watchRun(runId, signals);
  }

  async group(runId: string): Promise<{ params: JsonObject; coalesced: number; due: number } | null> {
    return this.rules.groupView(runId);
  }

  override async alarm(): Promise<void> {
    const fx = effects();
    this.rules.wake(Date.now(), fx);
    await this.after(fx);
  }

  /** Arms the next wake-up (same turn as the writes), then performs the effects. */
  private after(fx: FlowEffects): Promise<void> {
    const next = this.rules.nextWake(Date.now());
    if (next === null) void this.ctx.storage.deleteAlarm();
    else void this.ctx.storage.setAlarm(next);
    return this.perform(fx);
  }

  private async perform(fx: FlowEffects): Promise<void> {
    const gate = this.rules.gate;
    await Promise.all([
      ...fx.begin.map(async (b) => {
        const stub = runStub(this.env, b.runId);
        const ok = await stub?.begin({ gate, params: b.params, coalesced: b.coalesced }).catch(() => null);
        if (ok === true) {
          if (b.params) this.rules.begun(b.runId);
        } else if (ok === false || !stub) {
          // A run that cannot begin any more (canceled, deleted) gives its place back.
          await this.release(b.runId);
        } else if (b.params) {
          // Not reached: the next wake-up sends it again (the run's heartbeat asks too).
          this.rules.handoverFailed(b.runId);
          void this.ctx.storage.setAlarm(Date.now() + 5_000);
        }
      }),
      ...fx.cancel.map((c) =>
        runStub(this.env, c.runId)
          ?.cancel(c.code)
          .catch(() => null),
      ),
    ]);
  }
}

function effects(): FlowEffects {
  return { begin: [], cancel: [] };
}

/** The per-key concurrency object's rows, before it became a flow key: active runs and a FIFO queue. */
function moveLegacyRows(storage: DurableObjectStorage): void {
  const kv = storage.kv;
  const active = [...kv.list<number>({ prefix: "active/" })];
  const queued = [...kv.list<string>({ prefix: "queue/" })];
  if (active.length === 0 && queued.length === 0) return;
  const limit = kv.get<number>("limit") ?? 1;
  const shared = {
    settings: { throttle: null, debounce: null, batch: null, concurrency: { limit, onFull: "queue" } },
    active: active.map(([k, at]) => [k.slice("active/".length), at]),
    starts: [],
  };
  kv.put("s", JSON.stringify(shared));
  for (const [k, runId] of queued) {
    kv.put(
      `q/100/${k.slice("queue/".length)}`,
      JSON.stringify({ runId, at: Date.now(), reason: "concurrency" }),
    );
    kv.delete(k);
  }
  for (const [k] of active) kv.delete(k);
  kv.delete("limit");
  kv.delete("seq");
}
