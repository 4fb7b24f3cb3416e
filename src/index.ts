/**
 * Worker entry: HTTP requests go to the Hono app, cron events to the schedule handler; the run
 * Durable Object classes are exported beside them.
 */
import { app } from "./app.ts";
import { runSchedules } from "./schedules/schedule.ts";

export { FlowKey } from "./run/flow-keys.ts";
export { RunIndex } from "./run/run-index.ts";
export { RunObject } from "./run/run-object.ts";
export { SignalKey } from "./run/signal-keys.ts";

export default {
  fetch: app.fetch,
  async scheduled(controller, env) {
    await runSchedules(controller, env);
  },
} satisfies ExportedHandler<Env>;
