/**
 * What a run keeps, and when it writes it: the storage layout of one run (its document, a row
 * per finished step, a row per approval, an agent step's conversation while it runs) over a
 * small synchronous key-value port. The Durable Object gives it its SQLite-backed KV; the
 * workflow-test runner a Map. Every write a run makes goes through here, so the write plan (and
 * the rows a run is billed for) is decided in this one place.
 */
import type { Json } from "../bundle.ts";
import type { StepRecord } from "../engine/types.ts";
import type { ApprovalRecord } from "./approvals.ts";
import type { RunDoc } from "./envelope.ts";

/** A synchronous key-value store (a SQLite-backed object's `ctx.storage.kv`, or memory). */
export interface KvPort {
  get(key: string): string | undefined;
  put(key: string, value: string): void;
  delete(key: string): void;
  list(prefix: string): Iterable<[string, string]>;
}

/** A run as stored: its document, its finished steps and its approvals. */
export interface StoredRun {
  doc: RunDoc;
  records: Map<string, StepRecord>;
  approvals: ApprovalRecord[];
}

/** Storage keys: the run document, one key per step record by slash path, approvals by id. */
const RUN_KEY = "run";
const STEP_PREFIX = "step/";
const APPROVAL_PREFIX = "approval/";
/** An agent step's conversation while it runs, by step path (deleted when the step finishes). */
const CHECKPOINT_PREFIX = "checkpoint/";

/** Step statuses after which the engine no longer writes to the record. */
const SETTLED = new Set(["complete", "failed", "skipped", "canceled"]);

export class RunStore {
  /** JSON of each step row as stored, so finishing writes only what changed. */
  private stored = new Map<string, string>();
  /** The record object each row was last stored from (a settled one is never changed again). */
  private storedRecords = new Map<string, StepRecord>();
  /**
   * Paths with a stored conversation checkpoint, so that finishing a step (or the run) deletes
   * rows that exist instead of issuing a delete per step and a scan per run (`npm run bench`).
   */
  private checkpoints = new Set<string>();

  private readonly kv: KvPort;

  constructor(kv: KvPort) {
    this.kv = kv;
  }

  /** The run kept in storage, or null when there is none. */
  load(): StoredRun | null {
    const run = this.kv.get(RUN_KEY);
    if (run === undefined) return null;
    const doc = JSON.parse(run) as RunDoc;
    // What was stored is kept only while steps can still change (see stepFinished).
    const active = !isFinished(doc);
    const records = new Map<string, StepRecord>();
    for (const [key, json] of this.kv.list(STEP_PREFIX)) {
      const path = key.slice(STEP_PREFIX.length);
      records.set(path, JSON.parse(json) as StepRecord);
      if (active) this.stored.set(path, json);
    }
    for (const [key] of this.kv.list(CHECKPOINT_PREFIX))
      this.checkpoints.add(key.slice(CHECKPOINT_PREFIX.length));
    const approvals = [...this.kv.list(APPROVAL_PREFIX)].map(
      ([, json]) => JSON.parse(json) as ApprovalRecord,
    );
    return { doc, records, approvals };
  }

  saveDoc(doc: RunDoc): void {
    this.kv.put(RUN_KEY, JSON.stringify(doc));
  }

  /** A step (or fan-out item) finished: its row, and its conversation is no longer needed. */
  stepFinished(path: string, rec: StepRecord): void {
    this.writeStep(path, rec);
    if (this.checkpoints.delete(path)) this.kv.delete(CHECKPOINT_PREFIX + path);
  }

  /**
   * The run ended: every record settled at the end that storage does not have yet is written,
   * conversations go, and the document is written last. Returns the paths whose rows changed
   * (steps settled at the end are news to listeners).
   */
  runFinished(doc: RunDoc, finalRecords: ReadonlyMap<string, StepRecord>): string[] {
    const changed: string[] = [];
    for (const [path, rec] of finalRecords) {
      // A settled record stored as it finished is final: no need to serialize it again to see so.
      if (SETTLED.has(rec.status) && this.storedRecords.get(path) === rec) continue;
      const before = this.stored.get(path);
      if (rec.status !== "pending" || before !== undefined) this.writeStep(path, rec);
      if (this.stored.get(path) !== before) changed.push(path);
    }
    // Nothing writes a step row of a finished run again: an object that lingers in memory after
    // its run (many do in a busy isolate) keeps the records it serves, not a second copy as JSON.
    this.stored = new Map();
    this.storedRecords = new Map();
    for (const path of this.checkpoints) this.kv.delete(CHECKPOINT_PREFIX + path);
    this.checkpoints.clear();
    this.saveDoc(doc);
    return changed;
  }

  saveApproval(rec: ApprovalRecord): void {
    this.kv.put(APPROVAL_PREFIX + rec.id, JSON.stringify(rec));
  }

  loadCheckpoint(path: string): Json | null {
    const json = this.kv.get(CHECKPOINT_PREFIX + path);
    return json === undefined ? null : (JSON.parse(json) as Json);
  }

  /** `state` arrives masked: a conversation can quote a secret passed to a tool server. */
  saveCheckpoint(path: string, state: Json): void {
    this.checkpoints.add(path);
    this.kv.put(CHECKPOINT_PREFIX + path, JSON.stringify(state));
  }

  /** After storage was cleared (the run deleted): nothing is remembered as stored. */
  forget(): void {
    this.stored = new Map();
    this.storedRecords = new Map();
    this.checkpoints = new Set();
  }

  private writeStep(path: string, rec: StepRecord): void {
    const json = JSON.stringify(rec);
    if (this.stored.get(path) === json) return;
    this.kv.put(STEP_PREFIX + path, json);
    this.stored.set(path, json);
    this.storedRecords.set(path, rec);
  }
}

const TERMINAL = new Set(["complete", "failed", "canceled"]);

/** Whether the run has ended (complete, failed or canceled). */
export function isFinished(doc: { status: string }): boolean {
  return TERMINAL.has(doc.status);
}

/** A KvPort in memory (the workflow-test runner's storage). */
export function memoryKv(): KvPort {
  const rows = new Map<string, string>();
  return {
    get: (key) => rows.get(key),
    put: (key, value) => void rows.set(key, value),
    delete: (key) => void rows.delete(key),
    list: (prefix) => [...rows].filter(([k]) => k.startsWith(prefix)).sort(([a], [b]) => a.localeCompare(b)),
  };
}
