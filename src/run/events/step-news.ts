/**
 * Which step records are news to a run's live listeners at its end. Listeners hear of a record
 * when it finishes; the run's end settles what never finished (canceled, skipped), and only the
 * records that changed since they were told are sent again. The store (run-store.ts) hands over
 * the JSON it computes for its writes anyway, so nothing is serialised twice.
 */
import type { StepRecord } from "../../engine/types.ts";

export class StepNews {
  /** JSON of each record as listeners were told it. */
  private readonly seen = new Map<string, string>();

  /** Listeners were told of the record at `path` (as this JSON). */
  told(path: string, json: string): void {
    this.seen.set(path, json);
  }

  /** Whether the final record (`json`) is news: changed since told, or a step that never reported (not a bare pending one). */
  isNews(path: string, rec: StepRecord, json: string): boolean {
    return this.seen.get(path) !== json && (rec.status !== "pending" || this.seen.has(path));
  }
}
