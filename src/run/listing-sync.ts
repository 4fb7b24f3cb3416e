/**
 * A run reports its own status to the run listing (listing.ts), never on the invoke's path: one
 * write at a time, and a write asked for while one is in flight goes after it, with the status of
 * that moment. Each write's outcome is reported to the lifecycle, which decides what comes next
 * (run-plan.ts: retries, the run's alarm).
 */
import type { RunStatus } from "../engine/types.ts";
import { type ListedRun, recordRun } from "./listing.ts";
import type { RunDoc } from "./run-doc.ts";

export class ListingWriter {
  private inFlight: Promise<void> | null = null;
  private again = false;
  private readonly env: () => Env;
  /** The run as it is now (null once deleted), and the name it is listed under. */
  private readonly current: () => { doc: RunDoc; workflow: string } | null;
  private readonly report: (status: RunStatus, ok: boolean) => void;

  constructor(
    env: () => Env,
    current: () => { doc: RunDoc; workflow: string } | null,
    report: (status: RunStatus, ok: boolean) => void,
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
        const status = doc.status;
        const ok = await recordRun(this.env(), listedRun(doc, now.workflow)).then(
          () => true,
          () => false,
        );
        // A run deleted meanwhile (and perhaps created anew under the same id) is not this one.
        if (this.current()?.doc === doc) this.report(status, ok);
      } while (this.again);
    };
    this.inFlight = run().finally(() => {
      this.inFlight = null;
    });
    return this.inFlight;
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
