/**
 * The Worker's `scheduled` handler (docs/triggers.md, "Schedules"): when a cron trigger fires,
 * every invocable workflow's `schedule` entry due at the event's time starts one run with the
 * entry's params (checked against params.schema at build time). An entry in UTC is due when its
 * cron is the event's; an entry in another zone when the event's time is one of its fire times in
 * that zone (src/common/local-time.ts), whichever of the UTC crons that cover it carried the event.
 * The idempotency key `schedule:<cron>:<timezone>:<the firing's UTC instant>` names the entry's
 * firing, so a repeated event (Cloudflare delivers cron events at least once), a second cron
 * covering the same firing or a backfill over it reaches the run that exists. A paused entry
 * (schedule-state.ts) starts nothing. `invoke.auth` does not apply: no caller is involved.
 */
import workflowBundle from "workflow-bundle";
import type { Bundle, CompiledSchedule, CompiledWorkflow } from "../../bundle.ts";
import { firesAt, isUtc } from "../../common/local-time.ts";
import { collectSecrets } from "../../engine/secrets.ts";
import { recordRequest } from "../../run/start/run-request.ts";
import { type StartOutcome, startRun } from "../../run/start/start-run.ts";
import { publicOrigin } from "../public-origin.ts";
import { isPaused, scheduleState } from "./schedule-state.ts";

const bundle: Bundle = workflowBundle;

export interface ScheduledEvent {
  cron: string;
  /** Epoch ms of the time the event was scheduled for. */
  scheduledTime: number;
}

/** Starts the runs due for `event`; returns for how many workflows (their due entries all started or found). */
export async function runSchedules(event: ScheduledEvent, env: Env): Promise<number> {
  if (bundle.buildErrors?.length) {
    console.error(`schedule ${event.cron}: the workflows do not build; no run (npm start shows the errors)`);
    return 0;
  }
  const instant = Math.floor(event.scheduledTime / 60_000) * 60_000;
  const time = new Date(instant).toISOString();
  const starts: Array<Promise<unknown>> = [];
  for (const [name, key] of Object.entries(bundle.invocable)) {
    const wf = bundle.workflows[key];
    if (!wf) continue;
    const due = wf.schedule.flatMap((entry, index) => (isDue(entry, event.cron, instant) ? [index] : []));
    if (due.length === 0) continue;
    const tooShort = collectSecrets(bundle, wf, env as unknown as Record<string, unknown>).tooShort;
    if (tooShort.length > 0) {
      console.error(`schedule of ${name}: secret env values too short (${tooShort.join(", ")}); no run`);
      continue;
    }
    starts.push(
      // One read of the workflow's schedule object, only for a workflow with an entry due now.
      scheduleState(env, wf.name)
        .paused()
        .then((paused) =>
          Promise.all(
            due
              .filter((index) => !isPaused(paused, index, wf.schedule[index] as CompiledSchedule))
              .map((index) =>
                startEntry(env, key, wf, index, {
                  idempotencyKey: firingKey(wf, index, time),
                  manual: false,
                }),
              ),
          ),
        ),
    );
  }
  const results = await Promise.allSettled(starts);
  const failed = results.filter((r) => r.status === "rejected").length;
  // A failure here has no caller to answer: the Workers log is where an operator looks.
  if (failed > 0)
    console.error(`schedule ${event.cron} at ${time}: ${failed} workflow(s) could not start their runs`);
  return results.length - failed;
}

/**
 * The idempotency key of entry `index`'s firing at `time` (RFC 3339): `schedule:<cron>:<zone>:<time>`,
 * with `:1`, `:2`, … for the second and later entries of one workflow with the same cron and zone.
 */
export function firingKey(wf: CompiledWorkflow, index: number, time: string): string {
  const entry = wf.schedule[index] as CompiledSchedule;
  const firing = `schedule:${entry.cron}:${entry.timezone}:${time}`;
  const nth = wf.schedule
    .slice(0, index)
    .filter((e) => e.cron === entry.cron && e.timezone === entry.timezone).length;
  return nth > 0 ? `${firing}:${nth}` : firing;
}

/**
 * Starts a run of entry `index` with its params. Its request has no headers (each declared one is
 * null, as on an invoke without it) and `schedule: {index, cron, timezone, manual}`. `invoke.auth`
 * does not apply (a firing has no caller; an operator's run-now was checked by its route).
 */
export function startEntry(
  env: Env,
  key: string,
  wf: CompiledWorkflow,
  index: number,
  o: { idempotencyKey: string | null; manual: boolean },
): Promise<StartOutcome> {
  const entry = wf.schedule[index] as CompiledSchedule;
  return startRun(env, key, wf, {
    params: entry.params,
    request: {
      ...recordRequest(wf.invoke.headers, new Headers()),
      schedule: { index, cron: entry.cron, timezone: entry.timezone, manual: o.manual },
    },
    idempotencyKey: o.idempotencyKey,
    waitS: 0,
    origin: publicOrigin(env),
    // A scheduled run takes its place in its flow keys, but joins no group or batch.
    coalesce: false,
  });
}

/** Whether `entry` fires at `instant`, the time of an event of UTC cron `cron`. */
function isDue(entry: CompiledSchedule, cron: string, instant: number): boolean {
  return isUtc(entry.timezone) ? entry.cron === cron : firesAt(entry, instant);
}
