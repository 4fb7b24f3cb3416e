/**
 * The waits of a run's wait steps (docs/file-format.md), durable in the run's storage: one row per wait
 * (`wait/<path>`: what it waits for, until when, and what came), and at most one kept signal per
 * name (`signal/<name>`: a signal sent before the run reached its wait). A wait step asked again
 * after an eviction finds its row: its timeout and its sleep's end stay where they were, and a
 * signal that came meanwhile is its output. Nothing runs while a run waits: the run object's
 * alarm is set at the earliest `due` (nextDue), and a signal wakes the run through its RPC.
 */
import type { Json, JsonSchema } from "../../bundle.ts";
import type { Masker } from "../../engine/mask.ts";
import { validateJson } from "../../engine/schema.ts";
import { StepError, type WaitRequest } from "../../engine/types.ts";

export interface WaitRecord {
  path: string;
  kind: "signal" | "sleep";
  name: string | null;
  key: string | null;
  started_at: string;
  /** Epoch ms: the signal's timeout, or the sleep's end. */
  due: number;
  status: "waiting" | "signaled" | "timeout" | "slept";
  /** The signal's body (masked), once it came. */
  body?: Json;
  schema?: JsonSchema | null;
  /** A sleep's length in seconds (its output `{slept_s}`). */
  seconds?: number;
}

export interface WaitStorage {
  get(path: string): WaitRecord | undefined;
  put(rec: WaitRecord): void;
  all(): WaitRecord[];
  kept(name: string): Json | undefined;
  keep(name: string, body: Json): void;
  dropKept(name: string): void;
}

export interface WaitHooks {
  now(): number;
  masker: Masker;
  /** A wait started (written): what has finished is kept first, and the wake-up is re-armed. */
  started(rec: WaitRecord): void;
}

export type DeliverResult =
  | { outcome: "delivered"; step: string }
  | { outcome: "invalid"; errors: Array<{ path: string; message: string }> }
  | { outcome: "none" };

export class WaitBook {
  private readonly resolvers = new Map<string, (rec: WaitRecord) => void>();
  private readonly rows: WaitStorage;
  private readonly hooks: WaitHooks;

  constructor(rows: WaitStorage, hooks: WaitHooks) {
    this.rows = rows;
    this.hooks = hooks;
  }

  /** The wait of the step at `path`: resolves with its output, or throws `wait_timeout`. */
  wait(
    path: string,
    req: WaitRequest,
    signal: AbortSignal,
    waiting: () => void,
    begun?: (startedAt: string) => void,
  ): Promise<Json> {
    let rec = this.rows.get(path);
    if (!rec) {
      rec = {
        path,
        kind: req.kind,
        name: req.kind === "signal" ? req.name : null,
        key: req.kind === "signal" ? req.key : null,
        started_at: new Date(this.hooks.now()).toISOString(),
        due: req.kind === "signal" ? req.timeoutAt : req.until,
        status: "waiting",
        schema: req.kind === "signal" ? (req.schema as JsonSchema | null) : null,
        ...(req.kind === "sleep" ? { seconds: req.seconds } : {}),
      };
      // A signal that came before the run got here is consumed now (if it fits the schema).
      const early = rec.name !== null ? this.rows.kept(rec.name) : undefined;
      if (rec.name !== null && early !== undefined) {
        this.rows.dropKept(rec.name);
        if (violations(rec.schema ?? null, early).length === 0) {
          rec.status = "signaled";
          rec.body = early;
        }
      }
      this.rows.put(rec);
      this.hooks.started(rec);
    }
    begun?.(rec.started_at);
    this.settleIfDue(rec);
    const settled = outcome(rec);
    if (settled) return settled;
    waiting();
    return new Promise<Json>((resolve, reject) => {
      const onAbort = () => {
        this.resolvers.delete(path);
        reject(signal.reason);
      };
      if (signal.aborted) return onAbort();
      signal.addEventListener("abort", onAbort, { once: true });
      this.resolvers.set(path, (r) => {
        signal.removeEventListener("abort", onAbort);
        this.resolvers.delete(path);
        const done = outcome(r);
        if (done) done.then(resolve, reject);
      });
    });
  }

  /** Sleeps that ended and signals that timed out by now are settled. */
  expire(): void {
    for (const rec of this.rows.all()) {
      if (rec.status === "waiting" && this.settleIfDue(rec)) this.resolvers.get(rec.path)?.(rec);
    }
  }

  /** The earliest time a wait must be woken at (null: none waits). */
  nextDue(): number | null {
    let next: number | null = null;
    for (const rec of this.rows.all()) {
      if (rec.status === "waiting" && (next === null || rec.due < next)) next = rec.due;
    }
    return next;
  }

  /** Paths of the waits waiting now. */
  waitingPaths(): string[] {
    return this.rows.all().flatMap((r) => (r.status === "waiting" ? [r.path] : []));
  }

  /** Whether the wait at `path` has a step waiting on it in memory (false after an eviction). */
  hasListener(path: string): boolean {
    return this.resolvers.has(path);
  }

  /**
   * Delivers a signal to the earliest wait for `name` (and, given, `key`) waiting now: its body
   * must match the wait's schema (else the wait goes on waiting).
   */
  deliver(name: string, body: Json, key: string | null): DeliverResult {
    const candidates = this.rows
      .all()
      .filter(
        (r) =>
          r.status === "waiting" && r.kind === "signal" && r.name === name && (key === null || r.key === key),
      )
      .sort((a, b) => a.started_at.localeCompare(b.started_at));
    const rec = candidates[0];
    if (!rec) return { outcome: "none" };
    const errors = violations(rec.schema ?? null, body);
    if (errors.length > 0) return { outcome: "invalid", errors };
    rec.status = "signaled";
    rec.body = this.hooks.masker.maskJson(body);
    this.rows.put(rec);
    this.resolvers.get(rec.path)?.(rec);
    return { outcome: "delivered", step: rec.path };
  }

  /** Keeps a signal no wait is waiting for (one per name). */
  keep(name: string, body: Json): "kept" | "pending" {
    if (this.rows.kept(name) !== undefined) return "pending";
    this.rows.keep(name, this.hooks.masker.maskJson(body));
    return "kept";
  }

  /** The wait's time has come: a sleep has ended, a signal has timed out. */
  private settleIfDue(rec: WaitRecord): boolean {
    if (rec.status !== "waiting" || this.hooks.now() < rec.due) return false;
    rec.status = rec.kind === "sleep" ? "slept" : "timeout";
    this.rows.put(rec);
    return true;
  }
}

function violations(schema: JsonSchema | null, body: Json): Array<{ path: string; message: string }> {
  if (schema === null) return [];
  return validateJson(schema, body).map((v) => ({ path: v.path, message: v.message }));
}

/** The step's outcome once its wait is settled (null while it waits). */
function outcome(rec: WaitRecord): Promise<Json> | null {
  switch (rec.status) {
    case "waiting":
      return null;
    case "signaled":
      return Promise.resolve(rec.body ?? {});
    case "slept":
      return Promise.resolve({ slept_s: rec.seconds ?? 0 });
    case "timeout":
      return Promise.reject(
        new StepError("wait_timeout", `no \`${rec.name}\` signal came within the wait's timeout_s`),
      );
  }
}
