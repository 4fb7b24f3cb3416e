/**
 * The Worker's `scheduled` handler (docs/triggers.md, "Schedules"): when a cron trigger fires,
 * every invocable workflow's `schedule` entry with exactly that cron starts one run with the
 * entry's params (checked against params.schema at build time). The idempotency key
 * `schedule:<cron>:<scheduled time>` makes a repeated event for the same time (Cloudflare
 * delivers cron events at least once) reach the run that exists. `invoke.auth` does not apply:
 * no caller is involved.
 */
import workflowBundle from "workflow-bundle";
import type { Bundle } from "../bundle.ts";
import { collectSecrets } from "../engine/secrets.ts";
import { recordRequest } from "../run/run-request.ts";
import { startRun } from "../run/start-run.ts";

const bundle: Bundle = workflowBundle;

export interface ScheduledEvent {
  cron: string;
  /** Epoch ms of the time the event was scheduled for. */
  scheduledTime: number;
}

/** Starts the runs due for `event`; returns how many were started or found already started. */
export async function runSchedules(event: ScheduledEvent, env: Env): Promise<number> {
  const time = new Date(event.scheduledTime).toISOString();
  const origin = publicOrigin(env);
  const starts: Array<Promise<unknown>> = [];
  for (const [name, key] of Object.entries(bundle.invocable)) {
    const wf = bundle.workflows[key];
    if (!wf) continue;
    let nth = 0;
    for (const entry of wf.schedule) {
      if (entry.cron !== event.cron) continue;
      // Two entries of one workflow with the same cron are two runs: number the second on.
      const idempotencyKey = `schedule:${entry.cron}:${time}${nth > 0 ? `:${nth}` : ""}`;
      nth++;
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

/**
 * The origin a scheduled run's absolute URLs (an approval's `decide_url`) start with: no invoke
 * started the run, so it is the Worker's public URL from the optional `PUBLIC_URL` var; without
 * it (or when it is not an http(s) URL) those URLs stay relative.
 */
export function publicOrigin(env: Env): string | null {
  const raw = (env as unknown as Record<string, unknown>).PUBLIC_URL;
  if (typeof raw !== "string" || raw.trim() === "") return null;
  try {
    const url = new URL(raw.trim());
    return url.protocol === "https:" || url.protocol === "http:" ? url.origin : null;
  } catch {
    return null;
  }
}
