/**
 * Schedules on demand (docs/triggers.md, "Schedules on demand"), what an operator asks of one
 * `schedule` entry by its 0-based index: run it now, pause or resume it, or backfill its firings
 * over a time range. Backfilled firings take the idempotency keys the cron handler gives them, so a
 * firing that already ran, a repeated backfill or two at once start each firing once.
 */
import type { CompiledSchedule, CompiledWorkflow } from "../../bundle.ts";
import { nextFires, patternProblem } from "../../common/local-time.ts";
import { HttpProblem } from "../../common/problem.ts";
import type { StartOutcome } from "../../run/start/start-run.ts";
import { firingKey, startEntry } from "./schedule.ts";
import { type PausedEntry, scheduleState } from "./schedule-state.ts";

/** At most this many firings per backfill call. */
export const MAX_BACKFILL = 100;

/** One entry of a workflow's `schedule`, and its 0-based index in the file. */
export interface EntryAt {
  index: number;
  entry: CompiledSchedule;
}

/** The entry `raw` names (a 0-based index), or 404 `schedule_not_found`. */
export function scheduleEntry(wf: CompiledWorkflow, raw: string): EntryAt {
  const index = /^(0|[1-9][0-9]{0,3})$/.test(raw) ? Number(raw) : -1;
  const entry = wf.schedule[index];
  if (!entry) {
    const has = wf.schedule.length === 0 ? "has no schedule" : `has entries 0 to ${wf.schedule.length - 1}`;
    throw new HttpProblem("schedule_not_found", `${wf.name} ${has}; no entry ${JSON.stringify(raw)}`);
  }
  return { index, entry };
}

/** Starts entry `index`'s run now, with its params (`request.schedule.manual` true). */
export function runNow(
  env: Env,
  key: string,
  wf: CompiledWorkflow,
  index: number,
  idempotencyKey: string | null,
) {
  return startEntry(env, key, wf, index, { idempotencyKey, manual: true });
}

/** Pauses or resumes an entry; the paused entries after it. */
export function setPaused(
  env: Env,
  wf: CompiledWorkflow,
  { index, entry }: EntryAt,
  paused: boolean,
): Promise<PausedEntry[]> {
  return scheduleState(env, wf.name).setPaused({ index, cron: entry.cron, timezone: entry.timezone }, paused);
}

export interface BackfilledRun {
  at: string;
  run_id: string;
  started: boolean;
}

/** One run per firing of an entry in [from, to), each under its firing's idempotency key. */
export async function backfill(
  env: Env,
  key: string,
  wf: CompiledWorkflow,
  { index, entry }: EntryAt,
  from: number,
  to: number,
): Promise<BackfilledRun[]> {
  if (!(from < to)) throw new HttpProblem("invalid_query", "`from` must be before `to`");
  const unread = patternProblem(entry.cron);
  if (unread !== null) {
    throw new HttpProblem(
      "invalid_query",
      `entry ${index}'s cron \`${entry.cron}\` uses a form whose firings cannot be listed (${unread}); start its runs with /run`,
    );
  }
  const firings = nextFires(entry, from - 1, MAX_BACKFILL + 1).filter((t) => t < to);
  if (firings.length > MAX_BACKFILL) {
    throw new HttpProblem(
      "too_many_firings",
      `entry ${index} fires more than ${MAX_BACKFILL} times in [from, to); backfill a shorter range`,
    );
  }
  const outcomes: StartOutcome[] = await Promise.all(
    firings.map((t) =>
      startEntry(env, key, wf, index, {
        idempotencyKey: firingKey(wf, index, new Date(t).toISOString()),
        manual: true,
      }),
    ),
  );
  return firings.map((t, i) => {
    const o = outcomes[i] as StartOutcome;
    return { at: new Date(t).toISOString(), run_id: o.runId, started: o.outcome === "started" };
  });
}
