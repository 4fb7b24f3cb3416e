/**
 * The rules of one flow key (docs/triggers.md, "Shaping bursts"): for one workflow and one
 * rendered key, the runs that wait their turn and why (a priority queue), the runs active under
 * `concurrency`, the recent starts under `throttle`, the open `debounce` group or `batch`, and the
 * runs a `cancel_on` signal of that key cancels. Every setting whose key renders to this key lives
 * here: one object per workflow and key, not one per feature.
 *
 * Pure over a KvPort and a clock (test/run/keys/flow-key-rules.test.ts drives it on a virtual one): the
 * Durable Object (flow-keys.ts, `FlowKey`) gives it its SQLite-backed KV and performs what it returns —
 * begin runs whose turn came, cancel runs, wake at the next due time. Rows: `q/<rank>/<seq>` a
 * queued run (higher priority ranks first, then invoke order), `g/<run>` an open or closed group
 * (debounce: its latest params; batch: its items in `b/<run>/<n>`), `w/<run>` a run `cancel_on`
 * may cancel, `s` the active runs and recent starts. A group stays stored until its run has begun,
 * so an eviction between closing and beginning loses nothing (the run asks again: `turn`).
 */
import type { JsonObject } from "../../bundle.ts";
import type { KvPort } from "../kv-port.ts";
import {
  type AdmitRequest,
  type AdmitVerdict,
  type FlowEffects,
  type FlowSettings,
  type Group,
  MAX_BATCH_CHARS,
  MAX_QUEUED,
  type Queued,
  type QueueReason,
  type Shared,
  type TurnVerdict,
} from "./flow-key-types.ts";

const pad = (n: number, w: number) => String(n).padStart(w, "0");
/** Higher priority first: rank 000 is priority 100. */
const rank = (priority: number) => pad(100 - Math.max(-100, Math.min(100, Math.round(priority))), 3);

export class FlowKeyRules {
  private readonly kv: KvPort;
  private settings: FlowSettings | null = null;
  private shared: Shared;
  private queue: Queued[] = [];
  private groups = new Map<string, Group>();
  private watched = new Set<string>();
  private seq = 0;

  constructor(kv: KvPort) {
    this.kv = kv;
    const s = kv.get("s");
    this.shared = s === undefined ? { active: [], starts: [] } : (JSON.parse(s) as Shared);
    this.settings = this.shared.settings ?? null;
    for (const [key, json] of kv.list("q/")) {
      const q = JSON.parse(json) as Omit<Queued, "key">;
      this.queue.push({ ...q, key });
      this.seq = Math.max(this.seq, Number(key.slice(key.lastIndexOf("/") + 1)));
    }
    this.queue.sort((a, b) => (a.key < b.key ? -1 : 1));
    for (const [key, json] of kv.list("g/")) {
      const g = JSON.parse(json) as Group;
      if (g.kind === "batch") {
        // The group's row is written when it opens and closes; its items are the truth of its size.
        const items = kv.list(`b/${g.runId}/`);
        g.count = items.length;
        g.chars = items.reduce((n, [, v]) => n + v.length + 1, 0);
      }
      this.groups.set(key.slice(2), g);
    }
    for (const [key] of kv.list("w/")) this.watched.add(key.slice(2));
  }

  /** This key's name (as its first admit gave it). */
  get gate(): string {
    return this.shared.gate ?? "";
  }

  /** `cancel_on` of a run whose other settings live in other keys: these signals of this key may cancel it. */
  watchRun(runId: string, signals: string[]): void {
    this.watch(runId, signals);
  }

  /** An open group as it stands now (its queued run's envelope shows it): params, count, due. */
  groupView(runId: string): { params: JsonObject; coalesced: number; due: number } | null {
    const g = this.groups.get(runId);
    return g ? { ...this.handover(g), due: g.due } : null;
  }

  /** Runs waiting in the queue (not counting open groups). */
  get queued(): number {
    return this.queue.length;
  }

  // ---- inputs ------------------------------------------------------------------------------

  /** A new invoke of this key: a new run that starts or waits, one joined to a group, or a refusal. */
  admit(req: AdmitRequest, now: number, fx: FlowEffects): AdmitVerdict {
    const s = req.settings;
    if (JSON.stringify(s) !== JSON.stringify(this.settings) || this.shared.gate !== req.gate) {
      this.settings = s;
      this.shared.settings = s;
      this.shared.gate = req.gate;
      this.saveShared();
    }
    // The same run asking again: its invoke sent again (same idempotency key, same run id) after a
    // kill took the first one between this admission and its run's creation. It is answered as it
    // stands, so its run gets made; it never joins its own group or takes a second slot.
    const standing = this.standing(req.runId, now);
    if (standing) return standing;
    if (req.cancelOn.length > 0) this.watch(req.runId, req.cancelOn);
    const grouping = s.debounce ? "debounce" : s.batch ? "batch" : null;
    if (grouping) {
      const open = this.openGroup(now);
      if (open && this.join(open, req, now, fx)) {
        if (req.cancelOn.length > 0) this.unwatch(req.runId); // the run it joined is watched already
        return { outcome: "joined", runId: open.runId, reason: grouping, startsAt: open.due };
      }
      const g = this.openNew(grouping, req, now);
      return { outcome: "queued", runId: req.runId, reason: grouping, startsAt: g.due };
    }
    const cc = s.concurrency;
    if (cc && this.shared.active.length >= cc.limit && cc.onFull !== "queue") {
      const oldest = this.shared.active[0]?.[0];
      if (oldest !== undefined && cc.onFull === "skip") return { outcome: "skipped", runId: oldest };
      if (oldest !== undefined) {
        this.dropActive(oldest);
        fx.cancel.push({ runId: oldest, code: "replaced" });
      }
    }
    if (this.queue.length === 0 && this.canStart(now)) {
      this.started(req.runId, now);
      return { outcome: "start", runId: req.runId };
    }
    if (this.queue.length >= MAX_QUEUED) {
      if (req.cancelOn.length > 0) this.unwatch(req.runId);
      return { outcome: "queue_full", retryAfterS: this.retryAfterS(now) };
    }
    const q = this.enqueue(req.runId, req.priority, now, this.blockedBy(now));
    return { outcome: "queued", runId: req.runId, reason: q.reason, startsAt: this.startsAt(q, now) };
  }

  /** Where a run this key admitted already stands (an open group it leads, the queue, a slot), or null. */
  private standing(runId: string, now: number): AdmitVerdict | null {
    // A group it leads, open or closed (its run's heartbeat then takes the group's params).
    const g = this.groups.get(runId);
    if (g) return { outcome: "queued", runId, reason: g.kind, startsAt: g.due };
    const q = this.queue.find((x) => x.runId === runId);
    if (q) return { outcome: "queued", runId, reason: q.reason, startsAt: this.startsAt(q, now) };
    if (this.shared.active.some(([id]) => id === runId)) return { outcome: "start", runId };
    return null;
  }

  /** Runs holding a `concurrency` slot since before `before` (flow-keys.ts asks whether they exist). */
  slotHoldersSince(before: number): string[] {
    return this.shared.active.filter(([, at]) => at < before).map(([id]) => id);
  }

  /** A run that waits asks whether its turn came (its heartbeat: a begin that never arrived is not lost). */
  turn(runId: string, now: number, fx: FlowEffects): TurnVerdict {
    this.wake(now, fx);
    const g = this.groups.get(runId);
    const q = this.queue.find((x) => x.runId === runId);
    if (q) return { outcome: "queued", reason: q.reason, startsAt: this.startsAt(q, now) };
    if (g && !this.isClosed(g, now)) return { outcome: "queued", reason: g.kind, startsAt: g.due };
    // Its turn came: this answer begins it (with its group's params), no separate begin.
    const begun = fx.begin.find((b) => b.runId === runId);
    if (begun) fx.begin.splice(fx.begin.indexOf(begun), 1);
    if (!g) return { outcome: "start" };
    const handed = this.handover(g);
    this.dropGroup(runId);
    return { outcome: "start", ...handed };
  }

  /** A run ended (or was canceled while it waited): its slot, place, group and watch go; the next runs start. */
  release(runId: string, now: number, fx: FlowEffects): void {
    this.dropActive(runId);
    const i = this.queue.findIndex((x) => x.runId === runId);
    if (i >= 0) {
      this.kv.delete((this.queue[i] as Queued).key);
      this.queue.splice(i, 1);
    }
    this.dropGroup(runId);
    this.unwatch(runId);
    this.promote(now, fx);
  }

  /** A group's run has begun with its params: the group's rows go. */
  begun(runId: string): void {
    this.dropGroup(runId);
  }

  /** A group's begin did not reach its run: the next wake-up sends it again. */
  handoverFailed(runId: string): void {
    const g = this.groups.get(runId);
    if (g) delete g.handing;
  }

  /** The wake-up: groups whose time came close, and queued runs start as the window and slots allow. */
  wake(now: number, fx: FlowEffects): void {
    for (const g of [...this.groups.values()]) {
      if (!this.isClosed(g, now) || g.handing || this.queue.some((q) => q.runId === g.runId)) continue;
      // Started before an eviction (its slot is held): only its begin is sent again.
      const holds = this.shared.active.some(([id]) => id === g.runId);
      if (holds || (this.queue.length === 0 && this.canStart(now))) {
        if (!holds) this.started(g.runId, now);
        g.handing = true;
        fx.begin.push({ runId: g.runId, ...this.handover(g) });
      } else {
        const q = this.enqueue(g.runId, g.priority ?? 0, now, this.blockedBy(now));
        q.group = true;
        this.kv.put(q.key, JSON.stringify({ runId: q.runId, at: q.at, reason: q.reason, group: true }));
      }
    }
    this.promote(now, fx);
  }

  /** `cancel_on`: every run of this key watching `signal` is canceled (as it is now; later runs are not). */
  cancelFor(signal: string, fx: FlowEffects): string[] {
    const out: string[] = [];
    for (const runId of this.watched) {
      const w = this.kv.get(`w/${runId}`);
      if (w !== undefined && (JSON.parse(w) as string[]).includes(signal)) {
        out.push(runId);
        fx.cancel.push({ runId, code: "canceled_by_signal" });
      }
    }
    return out.sort();
  }

  /** When this key must next be woken (a group's due time, the throttle window opening), or null. */
  nextWake(now: number): number | null {
    let next = Number.POSITIVE_INFINITY;
    for (const g of this.groups.values()) if (!this.isClosed(g, now)) next = Math.min(next, g.due);
    const head = this.queue[0];
    if (head && this.slotFree()) {
      const at = this.throttleFreeAt(now);
      if (at !== null) next = Math.min(next, at);
    }
    // A closed group whose begin is not on its way: at once.
    for (const g of this.groups.values()) if (this.isClosed(g, now) && !g.handing) next = Math.min(next, now);
    return Number.isFinite(next) ? next : null;
  }

  // ---- groups (debounce, batch) ------------------------------------------------------------

  private openGroup(now: number): Group | null {
    for (const g of this.groups.values()) if (!this.isClosed(g, now)) return g;
    return null;
  }

  private isClosed(g: Group, now: number): boolean {
    return g.closed === true || now >= g.due;
  }

  private openNew(kind: "debounce" | "batch", req: AdmitRequest, now: number): Group {
    const s = this.settings as FlowSettings;
    const g: Group =
      kind === "debounce"
        ? {
            runId: req.runId,
            kind,
            firstAt: now,
            count: 1,
            due: Math.min(now + (s.debounce?.periodMs ?? 0), now + (s.debounce?.maxWaitMs ?? 0)),
            params: req.params,
            priority: req.priority,
          }
        : {
            runId: req.runId,
            kind,
            firstAt: now,
            count: 1,
            due: now + (s.batch?.maxWaitMs ?? 0),
            chars: 0,
            priority: req.priority,
          };
    this.groups.set(req.runId, g);
    this.putGroup(g);
    if (kind === "batch") this.addItem(g, req.params);
    return g;
  }

  /** The invoke joins the open group; false when it cannot (the batch would not fit: it closes). */
  private join(g: Group, req: AdmitRequest, now: number, fx: FlowEffects): boolean {
    const s = this.settings as FlowSettings;
    if (g.kind === "debounce" && s.debounce) {
      g.count += 1;
      g.params = req.params;
      g.priority = req.priority;
      g.due = Math.min(now + s.debounce.periodMs, g.firstAt + s.debounce.maxWaitMs);
      this.putGroup(g);
      return true;
    }
    const size = JSON.stringify(req.params).length + 1;
    if ((g.chars ?? 0) + size > MAX_BATCH_CHARS) {
      g.closed = true;
      this.putGroup(g);
      this.wake(now, fx);
      return false;
    }
    g.count += 1;
    this.addItem(g, req.params);
    if (s.batch && g.count >= s.batch.maxItems) {
      g.closed = true;
      this.putGroup(g);
      this.wake(now, fx);
    }
    return true;
  }

  private addItem(g: Group, params: JsonObject): void {
    const json = JSON.stringify(params);
    g.chars = (g.chars ?? 0) + json.length + 1;
    this.kv.put(`b/${g.runId}/${pad(g.count - 1, 4)}`, json);
  }

  private putGroup(g: Group): void {
    const { chars: _chars, handing: _handing, ...stored } = g;
    this.kv.put(`g/${g.runId}`, JSON.stringify(stored));
  }

  /** What a group's run begins with: the debounce's last params, or the batch's items, and how many invokes it stands for. */
  private handover(g: Group): { params: JsonObject; coalesced: number } {
    if (g.kind === "debounce") return { params: g.params ?? {}, coalesced: g.count };
    const items = [...this.kv.list(`b/${g.runId}/`)].map(([, v]) => JSON.parse(v) as JsonObject);
    return { params: { items }, coalesced: items.length };
  }

  private dropGroup(runId: string): void {
    const g = this.groups.get(runId);
    if (!g) return;
    this.groups.delete(runId);
    this.kv.delete(`g/${runId}`);
    if (g.kind === "batch") for (const [key] of this.kv.list(`b/${runId}/`)) this.kv.delete(key);
  }

  // ---- queue, slots, window ----------------------------------------------------------------

  private enqueue(runId: string, priority: number, now: number, reason: QueueReason): Queued {
    this.seq += 1;
    const key = `q/${rank(priority)}/${pad(this.seq, 12)}`;
    const q: Queued = { key, runId, at: now, reason };
    let i = this.queue.length;
    while (i > 0 && (this.queue[i - 1] as Queued).key > key) i--;
    this.queue.splice(i, 0, q);
    this.kv.put(key, JSON.stringify({ runId, at: now, reason }));
    return q;
  }

  /** Queued runs start in order while slots and the window allow (one write of `s` for all of them). */
  private promote(now: number, fx: FlowEffects): void {
    let changed = false;
    while (this.queue.length > 0 && this.canStart(now)) {
      const q = this.queue.shift() as Queued;
      this.kv.delete(q.key);
      this.started(q.runId, now, false);
      changed = true;
      const g = q.group ? this.groups.get(q.runId) : undefined;
      if (g) g.handing = true;
      fx.begin.push({ runId: q.runId, ...(g ? this.handover(g) : {}) });
    }
    if (changed) this.saveShared();
  }

  private canStart(now: number): boolean {
    return this.slotFree() && this.throttleFreeAt(now) === null;
  }

  private slotFree(): boolean {
    const cc = this.settings?.concurrency;
    return !cc || this.shared.active.length < cc.limit;
  }

  /** Null when the throttle window has room now, else when it will. */
  private throttleFreeAt(now: number): number | null {
    const th = this.settings?.throttle;
    if (!th) return null;
    this.shared.starts = this.shared.starts.filter((t) => t > now - th.periodMs);
    if (this.shared.starts.length < th.limit) return null;
    return (this.shared.starts[this.shared.starts.length - th.limit] as number) + th.periodMs;
  }

  private blockedBy(now: number): QueueReason {
    return this.slotFree() && this.throttleFreeAt(now) !== null ? "throttle" : "concurrency";
  }

  private started(runId: string, now: number, save = true): void {
    if (this.settings?.concurrency) this.shared.active.push([runId, now]);
    const th = this.settings?.throttle;
    if (th) {
      this.shared.starts.push(now);
      if (this.shared.starts.length > th.limit)
        this.shared.starts.splice(0, this.shared.starts.length - th.limit);
    }
    if (save && (this.settings?.concurrency || th)) this.saveShared();
  }

  private dropActive(runId: string): void {
    const i = this.shared.active.findIndex(([id]) => id === runId);
    if (i < 0) return;
    this.shared.active.splice(i, 1);
    this.saveShared();
  }

  private saveShared(): void {
    this.kv.put("s", JSON.stringify(this.shared));
  }

  /**
   * When a queued run is expected to start: under `throttle` alone, the window's arithmetic over
   * its place in the queue; behind `concurrency`, unknown (a slot frees when a run ends).
   */
  private startsAt(q: Queued, now: number): number | null {
    const th = this.settings?.throttle;
    if (q.reason !== "throttle" || !th) return null;
    const place = this.queue.indexOf(q);
    const window = this.shared.starts.filter((t) => t > now - th.periodMs);
    const free = th.limit - window.length;
    if (place < free) return now;
    const m = place - free;
    const base = window[m % th.limit] ?? now;
    return base + th.periodMs * (1 + Math.floor(m / th.limit));
  }

  /** What `Retry-After` says to an invoke refused with a full queue. */
  private retryAfterS(now: number): number {
    const at = this.throttleFreeAt(now);
    return Math.max(1, Math.ceil(((at ?? now + 60_000) - now) / 1000));
  }

  private watch(runId: string, signals: string[]): void {
    this.kv.put(`w/${runId}`, JSON.stringify(signals));
    this.watched.add(runId);
  }

  private unwatch(runId: string): void {
    if (!this.watched.delete(runId)) return;
    this.kv.delete(`w/${runId}`);
  }
}
