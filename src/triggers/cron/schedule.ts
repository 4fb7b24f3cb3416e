/**
 * The Worker's `scheduled` handler (docs/triggers.md, "Schedules"): when a cron trigger fires,
 * every invocable workflow's `schedule` entry due at the event's time starts one run with the
 * entry's params (checked against params.schema at build time). An entry in UTC is due when its
 * cron is the event's; an entry in another zone when the event's time is one of its fire times in
 * that zone (src/common/local-time.ts), whichever of the UTC crons that cover it carried the event.
 * The idempotency key `schedule:<cron>:<timezone>:<the firing's UTC instant>` names the entry's
 * firing, so a repeated event (Cloudflare delivers cron events at least once) or a second cron
 * covering the same firing reaches the run that exists. `invoke.auth` does not apply: no caller is
 * involved.
 */
import workflowBundle from "workflow-bundle";
import type { Bundle, CompiledSchedule } from "../../bundle.ts";
import { firesAt, isUtc } from "../../common/local-time.ts";
import { collectSecrets } from "../../engine/secrets.ts";
import { recordRequest } from "../../run/start/run-request.ts";
import { startRun } from "../../run/start/start-run.ts";
import { publicOrigin } from "../public-origin.ts";

const bundle: Bundle = workflowBundle;

export interface ScheduledEvent {
  cron: string;
  /** Epoch ms of the time the event was scheduled for. */
  scheduledTime: number;
}

/** Starts the runs due for `event`; returns how many were started or found already started. */
export async function runSchedules(event: ScheduledEvent, env: Env): Promise<number> {
  if (bundle.buildErrors?.length) {
    console.error(`schedule ${event.cron}: the workflows do not build; no run (npm start shows the errors)`);
    return 0;
  }
  const instant = Math.floor(event.scheduledTime / 60_000) * 60_000;
  const time = new Date(instant).toISOString();
  const origin = publicOrigin(env);
  const starts: Array<Promise<unknown>> = [];
  for (const [name, key] of Object.entries(bundle.invocable)) {
    const wf = bundle.workflows[key];
    if (!wf) continue;
    const firings = new Map<string, number>();
    for (const entry of wf.schedule) {
      if (!due(entry, event.cron, instant)) continue;
      // Two entries of one workflow with the same cron and zone are two runs: number the second on.
      const firing = `schedule:${entry.cron}:${entry.timezone}:${time}`;
      const nth = firings.get(firing) ?? 0;
      firings.set(firing, nth + 1);
      const idempotencyKey = nth > 0 ? `${firing}:${nth}` : firing;
      const tooShort = collectSecrets(bundle, wf, env as unknown as Record<string, unknown>).tooShort;
      if (tooShort.length > 0) {
        console.error(`schedule of ${name}: secret env values too short (${tooShort.join(", ")}); no run`);
        continue;
      }
      starts.push(
        startRun(env, key, wf, {
          params: entry.params,
          // No request: every declared header is missing (null), as on an invoke without it.
          request: recordRequest(wf.invoke.headers, new Headers()),
          idempotencyKey,
          waitS: 0,
          origin,
          // A scheduled run takes its place in its flow keys, but joins no group or batch.
          coalesce: false,
        }),
      );
    }
  }
  const results = await Promise.allSettled(starts);
  const failed = results.filter((r) => r.status === "rejected").length;
  // A failure here has no caller to answer: the Workers log is where an operator looks.
  if (failed > 0) console.error(`schedule ${event.cron} at ${time}: ${failed} run(s) could not be started`);
  return results.length - failed;
}

/** Whether `entry` fires at `instant`, the time of an event of UTC cron `cron`. */
function due(entry: CompiledSchedule, cron: string, instant: number): boolean {
  return isUtc(entry.timezone) ? entry.cron === cron : firesAt(entry, instant);
}
