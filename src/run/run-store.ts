/**
 * What a run keeps, and when it writes it (docs/operations.md): the storage layout of one run over a small
 * synchronous key-value port. The Durable Object gives it its SQLite-backed KV, where every row
 * written is billed; the workflow-test runner a Map. Every write a run makes goes through here.
 *
 * The plan, in rows:
 * - nothing when the run starts: a run is first written by whatever must outlive this
 *   incarnation (its first checkpoint, the answer of a run still active, the end); until then
 *   it lives in memory only, and an object lost before that write takes a run nobody can see.
 * - the pinned definition: kept once per deployed version by the definition store
 *   (src/run/definitions/), the run keeping only its version (`def_ref` in its `run` row). Until
 *   the store has answered for a version (the first runs an isolate starts of it), a run keeps
 *   it as before: a `def` row written once, with its first write, unless that write is the run's
 *   end: then it rides inside that one `run` row.
 * - `run`: the run document with the records of recomputable steps (transforms, skips, the
 *   records of workflow and fan-out steps, steps settled at the end) riding along. Written with
 *   the run's first write, at each checkpoint that has riders to carry, when the ledger changes,
 *   before a wait, and when the run ends.
 * - `step/<path>`: the record of a step with an effect outside the run (a webhook, an agent
 *   call), written when it finishes: that write is the checkpoint the effect needs. A rider too
 *   large to ride (its JSON over RIDER_MAX_CHARS, or the `run` row over RUN_ROW_MAX_CHARS) gets
 *   its own row too, since one stored value has a size limit.
 * - `approval/<id>`, `checkpoint/<path>` (an agent's conversation while it runs), `wait/<path>`
 *   (a wait step's wait) and `signal/<name>` (a signal kept for a wait not reached yet).
 * - `delivery/<id>`: a delivery's state and attempts, written once per attempt, never on the
 *   answer's path (deliveries.ts); read only by a run that has deliveries.
 * A 10- or 50-step transform run that finishes before its answer writes 1 row, `run`, at the
 * end; answered while still active, 2 (`run` then and at the end; a run that keeps its definition
 * inline: `def` too). After an eviction, recomputable steps finished since the last `run` write
 * run again; a step with an effect never does.
 */
import type { Bundle, Json } from "../bundle.ts";
import type { StepRecord } from "../engine/types.ts";
import { type DefinitionPort, INLINE_DEFINITIONS } from "./definitions/definition-port.ts";
import type { DeliveryRecord } from "./deliveries/delivery-rules.ts";
import { StepNews } from "./events/step-news.ts";
import type { KvPort } from "./kv-port.ts";
import { type PackedRecord, packRecord, unpackRecord } from "./record-pack.ts";
import type { RunDoc } from "./run-doc.ts";
import type { ApprovalRecord } from "./waits/approvals.ts";
import type { WaitRecord } from "./waits/waits.ts";

/** A run as stored: its document, its finished steps, its approvals and its waits. */
export interface StoredRun {
  doc: RunDoc;
  records: Map<string, StepRecord>;
  approvals: ApprovalRecord[];
  waits: WaitRecord[];
  /** Signals kept for a wait the run has not reached, by name. */
  kept: Map<string, Json>;
  /** Steps that were in flight at the last `run` write: path and start. */
  started: Array<[string, string]>;
}

const RUN_KEY = "run";
const DEF_KEY = "def";
const STEP_PREFIX = "step/";
const APPROVAL_PREFIX = "approval/";
const CHECKPOINT_PREFIX = "checkpoint/";
const WAIT_PREFIX = "wait/";
const KEPT_PREFIX = "signal/";
const DELIVERY_PREFIX = "delivery/";
const TRACE_KEY = "trace";
/** Where run notifications kept their outcomes before they were deliveries (one row, by entry index). */
const LEGACY_NOTIFY_KEY = "notify";

/** A rider whose JSON is longer gets its own row. */
const RIDER_MAX_CHARS = 64 * 1024;
/** The `run` row stays under this (riders move to their own rows, largest first). */
const RUN_ROW_MAX_CHARS = 1024 * 1024;

/**
 * The `run` row: the document, and the riders. Its definition is its version (`def_ref`, the
 * definition store has it), or inside (`def`), or in the `def` row when neither is here.
 */
interface RunRow {
  doc: Omit<RunDoc, "def"> & { def?: Bundle; def_ref?: string };
  /** Recomputable records, each with its usual values left out (record-pack.ts). */
  riders: Array<[string, PackedRecord | StepRecord]>;
  /** When each step in flight at this write started (a step resumed after an eviction keeps it). */
  started?: Array<[string, string]>;
}

export class RunStore {
  private readonly kv: KvPort;
  private doc: RunDoc | null = null;
  /** Recomputable records that ride with the next `run` write. */
  private riders = new Map<string, StepRecord>();
  /** Riders finished since the last `run` write. */
  private dirty = false;
  /** JSON of each record as last written to its own row (so an unchanged one is not written again). */
  private ownRows = new Map<string, string>();
  /** What listeners were told of each record, to find the news at the run's end. */
  private news = new StepNews();
  /** Paths with a stored conversation, so finishing deletes rows that exist (no delete per step, no scan). */
  private checkpoints = new Set<string>();
  /** The run has been written (its `def` and a first `run`). */
  private stored = false;
  /** The definition rides inside the `run` row (the run's first write was its end): no `def` row. */
  private defInRun = false;
  /** The run keeps only its definition's version (the definition store keeps the definition). */
  private defRef = false;
  /** The `run` row as read (parsed once: `definitionNeeded` reads it before `load`). */
  private read: RunRow | null = null;
  private readonly definitions: DefinitionPort;
  /** Told once, at the run's first write (the lifecycle arms the run's alarm in the same commit). */
  private firstWrite: () => void = () => {};
  /** The steps in flight now, with their starts (ride with every `run` write of an active run). */
  private inFlight: () => Array<[string, string]> = () => [];

  constructor(kv: KvPort, definitions: DefinitionPort = INLINE_DEFINITIONS) {
    this.kv = kv;
    this.definitions = definitions;
  }

  /** The stored row, parsed once (runs stored before checkpoints kept the whole document in `run`). */
  private row(): RunRow | null {
    if (this.read) return this.read;
    const text = this.kv.get(RUN_KEY);
    if (text === undefined) return null;
    const parsed = JSON.parse(text) as RunRow | RunDoc;
    this.read = "riders" in parsed ? parsed : { doc: parsed, riders: [] };
    return this.read;
  }

  /**
   * The stored run's definition when this isolate must read it before `load` (its version is
   * not the code's and was not read before): its version, workflow key and run id. Null: none needed.
   */
  definitionNeeded(): { hash: string; key: string; runId: string } | null {
    const doc = this.row()?.doc;
    if (!doc?.def_ref || this.definitions.held(doc.def_ref, doc.workflow_key)) return null;
    return { hash: doc.def_ref, key: doc.workflow_key, runId: doc.run_id };
  }

  /** `fn` says which steps are in flight and since when, at each `run` write of an active run. */
  trackInFlight(fn: () => Array<[string, string]>): void {
    this.inFlight = fn;
  }

  /** `fn` is told at the run's first write, within it (so what it arms lands in the same commit). */
  onFirstWrite(fn: () => void): void {
    this.firstWrite = fn;
  }

  /** Whether the run has been written at all (false: it lives in memory only, so far). */
  get isStored(): boolean {
    return this.stored;
  }

  /** The run kept in storage, or null when there is none. */
  load(): StoredRun | null {
    const row = this.row();
    this.read = null;
    if (!row) return null;
    const { def_ref: ref, ...stored } = row.doc;
    const def = ref
      ? this.definitions.held(ref, row.doc.workflow_key)
      : (row.doc.def ?? (JSON.parse(this.kv.get(DEF_KEY) ?? "null") as Bundle));
    // `definitionNeeded` says when to read it first: a run is never loaded without its definition.
    if (!def) throw new Error(`run ${row.doc.run_id}: its definition ${ref} was not read before loading`);
    const doc = { ...stored, def } as RunDoc;
    this.doc = doc;
    this.stored = true;
    this.defInRun = row.doc.def !== undefined;
    this.defRef = ref !== undefined;
    const riders = row.riders.map(([path, r]): [string, StepRecord] => [path, unpackRecord(path, r)]);
    const records = new Map<string, StepRecord>(riders);
    for (const [path, rec] of riders) this.riders.set(path, rec);
    for (const [key, json] of this.kv.list(STEP_PREFIX)) {
      const path = key.slice(STEP_PREFIX.length);
      records.set(path, JSON.parse(json) as StepRecord);
      this.riders.delete(path);
      this.ownRows.set(path, json);
    }
    for (const [path, rec] of records) this.news.told(path, JSON.stringify(rec));
    for (const [key] of this.kv.list(CHECKPOINT_PREFIX))
      this.checkpoints.add(key.slice(CHECKPOINT_PREFIX.length));
    const approvals = [...this.kv.list(APPROVAL_PREFIX)].map(
      ([, json]) => JSON.parse(json) as ApprovalRecord,
    );
    const waits = [...this.kv.list(WAIT_PREFIX)].map(([, json]) => JSON.parse(json) as WaitRecord);
    const kept = new Map(
      [...this.kv.list(KEPT_PREFIX)].map(([key, json]) => [
        key.slice(KEPT_PREFIX.length),
        JSON.parse(json) as Json,
      ]),
    );
    return { doc, records, approvals, waits, kept, started: row.started ?? [] };
  }

  /** A new run: kept in memory until something must outlive this incarnation (see `persist`). */
  runStarted(doc: RunDoc): void {
    this.doc = doc;
    this.stored = false;
  }

  /** The run as it is now is written, if it has not been yet (its definition, its document). */
  persist(): void {
    if (!this.stored) this.writeRun();
  }

  /** A re-run's reused records: they ride with the first `run` write and are not news to listeners. */
  reuse(records: ReadonlyArray<[string, StepRecord]>): void {
    for (const [path, rec] of records) {
      const json = JSON.stringify(rec);
      this.news.told(path, json);
      if (json.length > RIDER_MAX_CHARS) this.writeOwnRow(path, json);
      else this.riders.set(path, rec);
    }
  }

  /** The document changed (the ledger, the status): written with the riders. */
  saveDoc(doc: RunDoc): void {
    this.doc = doc;
    this.writeRun();
  }

  /**
   * A step (or fan-out item) finished. With an effect outside the run its record is written now,
   * with the riders if any wait; a recomputable one rides with the next write.
   */
  stepFinished(path: string, rec: StepRecord, effect: boolean): void {
    const json = JSON.stringify(rec);
    this.news.told(path, json);
    if (this.checkpoints.delete(path)) this.kv.delete(CHECKPOINT_PREFIX + path);
    if (!effect && json.length <= RIDER_MAX_CHARS && !this.ownRows.has(path)) {
      this.riders.set(path, rec);
      this.dirty = true;
      return;
    }
    // A record with its own row needs the run it belongs to (load() starts from `run`).
    this.persist();
    this.writeOwnRow(path, json);
    if (this.dirty) this.writeRun();
  }

  /** The document changed in a way the next checkpoint must keep (its trace's progress). */
  docChanged(): void {
    if (this.stored) this.dirty = true;
  }

  /** Before a wait (an approval asked): what has finished is kept, so nothing waits on recomputation. */
  checkpoint(): void {
    if (this.dirty || !this.stored) this.writeRun();
  }

  /**
   * The run ended: its final records (settled at the end, or finished) ride with the last
   * `run` write unless their own row has them already. Returns the paths whose records are news
   * to listeners (settled here: canceled, skipped).
   */
  runFinished(doc: RunDoc, finalRecords: ReadonlyMap<string, StepRecord>): string[] {
    const changed: string[] = [];
    for (const [path, rec] of finalRecords) {
      const json = JSON.stringify(rec);
      if (this.news.isNews(path, rec, json)) changed.push(path);
      const own = this.ownRows.get(path);
      if (own === json) continue;
      // The `run` write below is the run's first one if it has none yet.
      if (own !== undefined || json.length > RIDER_MAX_CHARS) this.writeOwnRow(path, json);
      else this.riders.set(path, rec);
    }
    for (const path of this.checkpoints) this.kv.delete(CHECKPOINT_PREFIX + path);
    this.checkpoints.clear();
    this.doc = doc;
    this.writeRun();
    // Nothing writes a record of a finished run again: keep no second copy of them as JSON.
    this.news = new StepNews();
    this.ownRows = new Map();
    return changed;
  }

  saveApproval(rec: ApprovalRecord): void {
    this.persist();
    this.kv.put(APPROVAL_PREFIX + rec.id, JSON.stringify(rec));
  }

  saveWait(rec: WaitRecord): void {
    this.persist();
    this.kv.put(WAIT_PREFIX + rec.path, JSON.stringify(rec));
  }

  /** A signal for a wait the run has not reached (masked). */
  keepSignal(name: string, body: Json): void {
    this.persist();
    this.kv.put(KEPT_PREFIX + name, JSON.stringify(body));
  }

  dropKeptSignal(name: string): void {
    this.kv.delete(KEPT_PREFIX + name);
  }

  /** The deliveries attempted so far (a run notified before deliveries existed: its entries by index). */
  deliveries(): { records: DeliveryRecord[]; legacy: Record<string, { done: boolean }> | null } {
    const records = this.kv.list(DELIVERY_PREFIX).map(([, json]) => JSON.parse(json) as DeliveryRecord);
    const legacy = this.kv.get(LEGACY_NOTIFY_KEY);
    return {
      records,
      legacy: legacy === undefined ? null : (JSON.parse(legacy) as Record<string, { done: boolean }>),
    };
  }

  /** One row per delivery, rewritten after each attempt (and by a retry or a recover). */
  saveDelivery(rec: DeliveryRecord): void {
    this.kv.put(DELIVERY_PREFIX + rec.id, JSON.stringify(rec));
  }

  /** The run's `trace` row (run-trace.ts): written only when an export of its spans failed. */
  readonly traceRow = {
    get: (): string | undefined => this.kv.get(TRACE_KEY),
    put: (json: string): void => this.kv.put(TRACE_KEY, json),
    delete: (): void => this.kv.delete(TRACE_KEY),
  };

  loadCheckpoint(path: string): Json | null {
    const json = this.kv.get(CHECKPOINT_PREFIX + path);
    return json === undefined ? null : (JSON.parse(json) as Json);
  }

  /** `state` arrives masked: a conversation can quote a secret passed to a tool server. */
  saveCheckpoint(path: string, state: Json): void {
    this.persist();
    this.checkpoints.add(path);
    this.kv.put(CHECKPOINT_PREFIX + path, JSON.stringify(state));
  }

  /** After storage was cleared (the run deleted): nothing is remembered as stored. */
  forget(): void {
    this.doc = null;
    this.riders = new Map();
    this.dirty = false;
    this.ownRows = new Map();
    this.news = new StepNews();
    this.checkpoints = new Set();
    this.stored = false;
    this.defInRun = false;
    this.defRef = false;
    this.read = null;
  }

  private writeOwnRow(path: string, json: string): void {
    if (this.ownRows.get(path) === json) return;
    this.kv.put(STEP_PREFIX + path, json);
    this.ownRows.set(path, json);
    if (this.riders.delete(path)) this.dirty = true;
  }

  /** One `run` row: the document without its definition, and the riders (the largest move out if it is too big). */
  private writeRun(): void {
    const doc = this.doc;
    if (!doc) return;
    const first = !this.stored;
    if (first) {
      this.stored = true;
      if (this.definitions.kept(doc.def.hash, doc.workflow_key)) this.defRef = true;
      else {
        // Kept inline: a run first written at its end keeps its definition in its one row; any
        // other gets a `def` row now, so that no later write of `run` carries it again.
        const defJson = JSON.stringify(doc.def);
        if (isFinished(doc) && defJson.length <= RIDER_MAX_CHARS) this.defInRun = true;
        else this.kv.put(DEF_KEY, defJson);
      }
    }
    const { def, ...withoutDef } = doc;
    const rest: RunRow["doc"] = this.defRef
      ? { ...withoutDef, def_ref: def.hash }
      : this.defInRun
        ? { ...withoutDef, def }
        : withoutDef;
    const packed = () =>
      [...this.riders].map(([path, r]): [string, PackedRecord] => [path, packRecord(path, r)]);
    let riders = packed();
    const started = isFinished(doc) ? [] : this.inFlight();
    const extra = started.length > 0 ? { started } : {};
    let text = JSON.stringify({ doc: rest, riders, ...extra } satisfies RunRow);
    if (text.length > RUN_ROW_MAX_CHARS) {
      // A rider that moves out is written whole (a record's own row is read as it is).
      const sized = [...this.riders]
        .map(([path, rec]) => ({ path, json: JSON.stringify(rec) }))
        .sort((a, b) => b.json.length - a.json.length);
      let size = text.length;
      for (const r of sized) {
        if (size <= RUN_ROW_MAX_CHARS) break;
        this.kv.put(STEP_PREFIX + r.path, r.json);
        this.ownRows.set(r.path, r.json);
        this.riders.delete(r.path);
        size -= r.json.length;
      }
      riders = packed();
      text = JSON.stringify({ doc: rest, riders, ...extra } satisfies RunRow);
    }
    this.kv.put(RUN_KEY, text);
    this.dirty = false;
    if (first) this.firstWrite();
  }
}

const TERMINAL = new Set(["complete", "failed", "canceled"]);

/** Whether the run has ended (complete, failed or canceled). */
export function isFinished(doc: { status: string }): boolean {
  return TERMINAL.has(doc.status);
}
