/**
 * A run reports its own status (and once it has ended, its deliveries' counts) to the run listing
 * (listing.ts), never on the invoke's path: one write at a time, and a write asked for while one
 * is in flight goes after it, with the status of that moment. Each write's outcome is reported to the lifecycle, which decides what comes next
 * (run-plan.ts: retries, the run's alarm).
 */

import type { RunDoc } from "../run-doc.ts";
import {
  type ListedRun,
  type ListedScores,
  type ListingTicket,
  recordRun,
  ticketWritten,
} from "./listing.ts";
import { listKey } from "./listing-layout.ts";
import { handOver, rodeTicket } from "./listing-ride.ts";

/** The run as the listing should show it now. */
export interface ListingSubject {
  doc: RunDoc;
  /** The name it is listed under. */
  workflow: string;
  /** Its deliveries' counts (null: none). */
  deliveries: { total: number; failed: number } | null;
  /** It has finished and its guard alarm is armed: its entry may ride with other runs' (listing.ts). */
  guarded: boolean;
  /** An express run whose caller carries its entry (listing.ts, `keepListed`): nothing is sent. */
  carried: boolean;
  /** Its scores (null: none). */
  scores?: ListedScores | null;
}

export class ListingWriter {
  private inFlight: Promise<void> | null = null;
  private again = false;
  private readonly env: () => Env;
  /** The run as it is now (null once deleted). */
  private readonly current: () => ListingSubject | null;
  /** What the listing now says of the run (`listKey`) and by when it is written, or that the write failed. */
  private readonly report: (key: string, ok: boolean, durableAt: number | null) => void;
  /** The last entry the shard took without having written it yet: sent again, it is a confirmation. */
  private shown: string | null = null;
  /** Where that entry waits: once its batch is heard written (listing.ts), no confirmation is sent. */
  private ticket: ListingTicket | null = null;

  constructor(
    env: () => Env,
    current: () => ListingSubject | null,
    report: (key: string, ok: boolean, durableAt: number | null) => void,
  ) {
    this.env = env;
    this.current = current;
    this.report = report;
  }

  /** Writes the run's current status; resolves once this write (and any asked meanwhile) is done. */
  write(): Promise<void> {
    if (this.inFlight) {
      this.again = true;
      return this.inFlight;
    }
    const run = async () => {
      do {
        this.again = false;
        const now = this.current();
        if (!now) return;
        const { doc } = now;
        const key = listKey(doc.status, now.deliveries, doc.compensation?.status ?? null);
        if (now.carried) {
          this.report(key, true, null);
          continue;
        }
        const confirm = this.shown === key;
        const entry = listedRun(now);
        // An entry that rode with other runs' has its ticket from their carrier (listing.ts).
        const ticket = confirm ? (this.ticket ?? rodeTicket(entry)) : null;
        const send = () =>
          confirm
            ? recordRun(this.env(), entry, true)
            : now.guarded
              ? handOver(this.env(), entry)
              : recordRun(this.env(), entry);
        const answer =
          ticket && ticketWritten(ticket)
            ? { durableAt: null, ticket: null }
            : await send().catch(() => null);
        this.shown = answer?.durableAt != null ? key : null;
        this.ticket = answer?.ticket ?? null;
        // A run deleted meanwhile (and perhaps created anew under the same id) is not this one.
        if (this.current()?.doc === doc) this.report(key, answer !== null, answer?.durableAt ?? null);
      } while (this.again);
    };
    this.inFlight = run().finally(() => {
      this.inFlight = null;
    });
    return this.inFlight;
  }

  /** The run's entry as the listing shows it (null: no run). */
  entry(): ListedRun | null {
    const now = this.current();
    return now ? listedRun(now) : null;
  }
}

function listedRun({ doc, workflow, deliveries, scores }: ListingSubject): ListedRun {
  return {
    run_id: doc.run_id,
    workflow,
    status: doc.status,
    created_at: doc.created_at,
    finished_at: doc.finished_at,
    ...(deliveries ? { deliveries } : {}),
    ...(doc.compensation ? { compensation: doc.compensation.status } : {}),
    ...(doc.search ? { search: doc.search } : {}),
    ...(scores ? { scores } : {}),
  };
}
