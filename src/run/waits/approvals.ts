/**
 * Human approvals as run state (docs/agents-and-tools.md): the run object owns them, keeps each one in its own
 * storage row, wakes the step that waits for it when a human decides, and times it out from the
 * run's alarm. While a step waits nothing runs: the object may be evicted; a resumed step asks
 * again with the same key, and since the approval's id is derived from (run, step path, key) it
 * finds its approval — decided or still pending — instead of creating a second one.
 *
 * What is stored and shown is masked (arguments can hold a secret passed to a tool server). The
 * notification POST (a delivery of the run: deliveries.ts) carries the approval and an absolute
 * `decide_url`; it is signed like a webhook step's `sign` when the policy gives a key.
 */
import type { Json } from "../../bundle.ts";
import { sha256Hex } from "../../common/sha256.ts";
import type { Masker } from "../../engine/mask.ts";
import type {
  ApprovalOutcome,
  ApprovalRequest,
  ApprovalStatus,
  ApprovalWaiting,
} from "../../engine/types.ts";

export interface ApprovalRecord {
  id: string;
  run_id: string;
  /** Slash path of the step. */
  step: string;
  kind: "tool" | "needs_human";
  server: string | null;
  tool: string | null;
  arguments: Json;
  status: ApprovalStatus;
  comment: string | null;
  created_at: string;
  decided_at: string | null;
  /** When it times out (its own timeout, else the run's deadline). */
  expires_at: string;
  /** True when `expires_at` is the approval's own timeout (not the run's deadline). */
  own_timeout?: boolean;
  /** Where its notification goes (kept for the delivery: deliveries.ts); never shown. */
  notify?: { url: string; sign_secret: string | null };
}

/** What the run object gives the book: storage, clock, masking, and what to do on changes. */
export interface ApprovalStore {
  get(id: string): ApprovalRecord | undefined;
  put(rec: ApprovalRecord): void;
  all(): ApprovalRecord[];
}

export interface ApprovalHooks {
  runId: string;
  /** Epoch ms of the run's deadline. */
  deadline: number;
  masker: Masker;
  now(): number;
  /** A step waits for `rec`; `created` is false when a resumed step found it again. */
  requested(rec: ApprovalRecord, created: boolean): void;
  decided(rec: ApprovalRecord): void;
}

export type DecideResult =
  | { outcome: "decided"; approval: ApprovalRecord }
  | { outcome: "not_found" }
  | { outcome: "already_decided"; approval: ApprovalRecord };

/** The public shape (the `own_timeout` flag and the notification's target left out). */
export function publicApproval(rec: ApprovalRecord): ApprovalRecord {
  const { own_timeout: _own, notify: _notify, ...rest } = rec;
  return rest;
}

/** `apr_` + 32 hex digits of SHA-256(run, step path, key): the same for the same call after a resume. */
export async function approvalId(runId: string, path: string, key: string): Promise<string> {
  const hex = await sha256Hex(`${runId}\n${path}\n${key}`);
  return `apr_${hex.slice(0, 32)}`;
}

export function decideUrl(origin: string | null, runId: string, id: string): string {
  return `${origin ?? ""}/runs/${runId}/approvals/${id}`;
}

function outcomeOf(rec: ApprovalRecord): ApprovalOutcome {
  return { id: rec.id, status: rec.status as ApprovalOutcome["status"], comment: rec.comment };
}

export class ApprovalBook {
  private readonly store: ApprovalStore;
  private readonly hooks: ApprovalHooks;
  private readonly waiters = new Map<string, Set<(o: ApprovalOutcome) => void>>();

  constructor(store: ApprovalStore, hooks: ApprovalHooks) {
    this.store = store;
    this.hooks = hooks;
  }

  list(): ApprovalRecord[] {
    return this.store
      .all()
      .sort((a, b) => a.created_at.localeCompare(b.created_at) || a.id.localeCompare(b.id));
  }

  pending(): ApprovalRecord[] {
    return this.list().filter((a) => a.status === "pending");
  }

  /** Creates the approval (or finds it again) and resolves once it is decided or timed out. */
  async request(
    path: string,
    req: ApprovalRequest,
    signal: AbortSignal,
    waiting?: ApprovalWaiting,
  ): Promise<ApprovalOutcome> {
    const id = await approvalId(this.hooks.runId, path, req.key);
    let rec = this.store.get(id);
    const created = !rec;
    if (!rec) {
      const now = this.hooks.now();
      const own = req.timeoutS !== null ? now + req.timeoutS * 1000 : Number.POSITIVE_INFINITY;
      const expires = Math.min(own, this.hooks.deadline);
      rec = {
        id,
        run_id: this.hooks.runId,
        step: path,
        kind: req.kind,
        server: req.server,
        tool: req.tool,
        arguments: this.hooks.masker.maskJson(req.arguments),
        status: "pending",
        comment: null,
        created_at: new Date(now).toISOString(),
        decided_at: null,
        expires_at: new Date(expires).toISOString(),
        own_timeout: own < this.hooks.deadline,
        // Its notification is a delivery of the run (deliveries.ts), sent after this row is written.
        ...(req.notify ? { notify: { url: req.notify.url, sign_secret: req.notify.signSecret } } : {}),
      };
      this.store.put(rec);
    }
    if (rec.status !== "pending") return outcomeOf(rec);
    const waitingFor = rec;
    return new Promise<ApprovalOutcome>((resolve, reject) => {
      const onAbort = () => {
        this.waiters.get(id)?.delete(done);
        reject(signal.reason);
      };
      const done = (o: ApprovalOutcome) => {
        signal.removeEventListener("abort", onAbort);
        waiting?.(false);
        resolve(o);
      };
      if (signal.aborted) return onAbort();
      signal.addEventListener("abort", onAbort, { once: true });
      let set = this.waiters.get(id);
      if (!set) {
        set = new Set();
        this.waiters.set(id, set);
      }
      set.add(done);
      // After the waiter is in place: a listener sees the step waiting, and a decision finds it.
      waiting?.(true);
      this.hooks.requested(waitingFor, created);
    });
  }

  decide(id: string, decision: "approved" | "rejected" | "timeout", comment: string | null): DecideResult {
    const rec = this.store.get(id);
    if (!rec) return { outcome: "not_found" };
    if (rec.status !== "pending") return { outcome: "already_decided", approval: rec };
    const decided: ApprovalRecord = {
      ...rec,
      status: decision,
      comment: comment === null ? null : this.hooks.masker.maskText(comment),
      decided_at: new Date(this.hooks.now()).toISOString(),
    };
    this.store.put(decided);
    const waiting = this.waiters.get(id);
    this.waiters.delete(id);
    for (const w of waiting ?? []) w(outcomeOf(decided));
    this.hooks.decided(decided);
    return { outcome: "decided", approval: decided };
  }

  /** Times out every pending approval whose own timeout has passed; returns how many. */
  expire(now: number): number {
    let n = 0;
    for (const rec of this.pending()) {
      if (rec.own_timeout && Date.parse(rec.expires_at) <= now) {
        this.decide(rec.id, "timeout", null);
        n++;
      }
    }
    return n;
  }

  /** The earliest own timeout of a pending approval (epoch ms), or null. */
  nextExpiry(): number | null {
    let next: number | null = null;
    for (const rec of this.pending()) {
      if (!rec.own_timeout) continue;
      const t = Date.parse(rec.expires_at);
      if (next === null || t < next) next = t;
    }
    return next;
  }
}
