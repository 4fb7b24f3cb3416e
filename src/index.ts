/**
 * Worker entry: HTTP requests go to the Hono app (the webhook trigger among its routes), every
 * other trigger's events to the handlers of src/triggers/index.ts; the Durable Object classes are
 * exported beside them.
 */
import { app } from "./app.ts";
import { triggerHandlers } from "./triggers/index.ts";

export { DefinitionStore } from "./run/definitions/definition-store.ts";
export { FlowKey } from "./run/keys/flow-keys.ts";
export { SignalKey } from "./run/keys/signal-keys.ts";
export { RunIndex } from "./run/listing/run-index.ts";
export { RunObject } from "./run/object/run-object.ts";
export { ScheduleState } from "./triggers/cron/schedule-state.ts";

export default {
  fetch: app.fetch,
  ...triggerHandlers,
} satisfies ExportedHandler<Env>;
