/**
 * `GET /workflows/{name}/schedules[?from=T][&count=N]` (docs/http-api.md): each `schedule` entry
 * of a workflow with its next fire times, as the cron handler will start them
 * (src/common/local-time.ts), and whether an operator paused it. No credentials: a schedule says
 * when runs start, not what they hold, as the front page lists the workflows.
 */
import type { CompiledWorkflow } from "../bundle.ts";
import { nextFires, patternProblem } from "../common/local-time.ts";
import { bad, parseDateTime, single } from "./run-list.ts";

export const DEFAULT_COUNT = 5;
export const MAX_COUNT = 50;

export interface SchedulesBody {
  schedules: Array<{ index: number; cron: string; timezone: string; paused: boolean; next: string[] }>;
}

export function schedulesOf(
  wf: CompiledWorkflow,
  query: URLSearchParams,
  now: number,
  paused: (index: number) => boolean,
): SchedulesBody {
  const rawFrom = single(query, "from");
  const from = rawFrom === null ? now : parseDateTime("from", rawFrom);
  const rawCount = single(query, "count");
  const count = rawCount === null ? DEFAULT_COUNT : /^[0-9]{1,2}$/.test(rawCount) ? Number(rawCount) : 0;
  if (!(count >= 1 && count <= MAX_COUNT)) throw bad(`count must be an integer from 1 to ${MAX_COUNT}`);
  return {
    schedules: wf.schedule.map((entry, index) => ({
      index,
      cron: entry.cron,
      timezone: entry.timezone,
      paused: paused(index),
      // A paused entry fires at none of them until it is resumed.
      next: fireTimes(entry, from, count),
    })),
  };
}

/** The next fire times; none listed for a UTC cron croner cannot read (`L-3`: docs/triggers.md). */
function fireTimes(entry: { cron: string; timezone: string }, from: number, count: number): string[] {
  if (patternProblem(entry.cron) !== null) return [];
  return nextFires(entry, from, count).map((t) => new Date(t).toISOString());
}
