/**
 * A run reports its own status to the run listing (listing.ts), never on the invoke's path: one
 * write at a time, a status that changed meanwhile sent next, failures counted so the object's
 * alarm can retry with a back-off. What the listing has acknowledged is kept in memory only:
 * after a wake-up the status is sent again (the listing's write is idempotent).
 */
import type { RunStatus } from "../engine/types.ts";
import type { RunDoc } from "./envelope.ts";
import { type ListedRun, recordRun } from "./listing.ts";

/** Until the listing has acknowledged a run's status, its alarm retries this often (doubling, capped). */
export const LISTING_RETRY_MS = 3_000;
/**
 * The back-off stops here: however long a shard has been failing, the run tries again within
 * this time, so once the shard answers the listing catches up well inside SPEC's 10 s lag (the
 * envelope stays the source of truth meanwhile). One alarm every 5 s per unlisted run is cheap
 * next to a listing that stays stale for minutes.
 */
export const LISTING_RETRY_MAX_MS = 5_000;

export class ListingSync {
  /** The status the run listing has acknowledged. */
  private listed: RunStatus | null = null;
  private inFlight: Promise<boolean> | null = null;
  private failures = 0;

  /** The object's environment, read at each write (the listing's bindings). */
  private readonly env: () => Env;
  /** The run as it is now (null once deleted), and the name it is listed under. */
  private readonly current: () => { doc: RunDoc; workflow: string } | null;

  constructor(env: () => Env, current: () => { doc: RunDoc; workflow: string } | null) {
    this.env = env;
    this.current = current;
  }

  /**
   * Sends the run's current status to the listing unless it has it already; true once the
   * listing has it. One write at a time; a status that changed meanwhile is sent next.
   */
  async sync(): Promise<boolean> {
    for (;;) {
      if (this.inFlight) {
        await this.inFlight;
        continue;
      }
      const run = this.current();
      if (!run || this.listed === run.doc.status) return true;
      const { doc } = run;
      const status = doc.status;
      const write = recordRun(this.env(), listedRun(doc, run.workflow)).then(
        () => {
          // A run deleted meanwhile (and perhaps created anew under the same id) is not this one.
          if (this.current()?.doc === doc) this.listed = status;
          this.failures = 0;
          return true;
        },
        () => {
          this.failures += 1;
          return false;
        },
      );
      this.inFlight = write;
      const ok = await write;
      this.inFlight = null;
      if (!ok) return false;
    }
  }

  /** Whether the listing has acknowledged this status of the run. */
  acknowledged(status: RunStatus): boolean {
    return this.listed === status;
  }

  /** The run started running after the listing saw it pending (rare: its first step waited) or queued. */
  statusChanged(): void {
    if (this.listed === "pending" || this.listed === "queued") void this.sync();
  }

  /** Forget what the listing acknowledged (it asked the run to report again, or the run was deleted). */
  reset(): void {
    this.listed = null;
  }

  /** How long until the next retry of a failed write. */
  retryMs(): number {
    return Math.min(LISTING_RETRY_MAX_MS, LISTING_RETRY_MS * 2 ** Math.max(0, this.failures - 1));
  }
}

function listedRun(doc: RunDoc, workflow: string): ListedRun {
  return {
    run_id: doc.run_id,
    workflow,
    status: doc.status,
    created_at: doc.created_at,
    finished_at: doc.finished_at,
  };
}
