/**
 * A workflow's scores over a time window (docs/http-api.md, "Scores"): read from its run listing,
 * whose entries carry each run's scores with its workflow version and arms (so scoring costs no row
 * beyond the listing's own batches), summed up per step, scorer, version and arm (count, mean,
 * p10/p50/p90), each arm compared with the first arm of its step (Welch's 95 % interval), and the
 * daily mean per scorer and arm for the chart. At most MAX_RUNS runs are read, newest first; the
 * answer says how many were.
 */
import type { CompiledWorkflow } from "../../bundle.ts";
import { residencyOf } from "../jurisdiction.ts";
import { type ListedRun, listRuns, type Position } from "../listing/listing.ts";
import { report, type ScoreReport } from "./score-summary.ts";

export type { ScoreReport };

export const MAX_RUNS = 10_000;
const PAGE = 100;

export async function scoreReport(
  env: Env,
  wf: CompiledWorkflow,
  since: number,
  until: number,
): Promise<ScoreReport> {
  const runs: ListedRun[] = [];
  let after: Position | null = { t: until + 1, id: "" };
  while (after && runs.length < MAX_RUNS) {
    const page = await listRuns(env, {
      workflow: wf.name,
      residency: residencyOf(wf),
      status: null,
      limit: PAGE,
      after,
    });
    let older = false;
    for (const r of page.runs) {
      if (Date.parse(r.created_at) < since) {
        older = true;
        break;
      }
      runs.push(r);
    }
    after = older ? null : page.next;
  }
  return report(wf, since, until, runs.slice(0, MAX_RUNS));
}
