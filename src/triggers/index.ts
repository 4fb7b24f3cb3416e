/**
 * Every way a run starts, in one table (docs/triggers.md; docs/architecture.md, "Add a trigger"):
 * each trigger turns its event into one start request for the run layer (src/run/start/) in its
 * own folder here, and names the Worker handler its events arrive through. The webhook arrives
 * through the app's `fetch` (`POST /invoke/{name}`, src/triggers/webhook/invoke.ts); every other
 * trigger adds its handler here, and src/index.ts exports them all without naming any.
 */
import type { TriggerKind } from "../bundle.ts";
import { runSchedules } from "./cron/schedule.ts";
import { receiveEmail } from "./email/email.ts";
import { consumeBatch } from "./queue/queue.ts";

/** The Worker handlers a trigger adds besides `fetch`. */
export type TriggerHandlers = Partial<Pick<ExportedHandler<Env>, "scheduled" | "queue" | "email">>;

export interface WorkerTrigger {
  /** What its events arrive through: the app's routes (`fetch`), or handlers of its own. */
  handlers: TriggerHandlers | "fetch";
}

export const TRIGGERS: Record<TriggerKind, WorkerTrigger> = {
  webhook: { handlers: "fetch" },
  // The protocols' routes (docs/protocols.md, docs/a2a.md): POST /v1/chat/completions, POST /mcp, /a2a/{name}.
  chat: { handlers: "fetch" },
  mcp: { handlers: "fetch" },
  a2a: { handlers: "fetch" },
  cron: {
    handlers: {
      async scheduled(controller, env) {
        await runSchedules(controller, env);
      },
    },
  },
  queue: {
    handlers: {
      async queue(batch, env) {
        await consumeBatch(batch, env);
      },
    },
  },
  email: {
    handlers: {
      async email(message, env) {
        await receiveEmail(message, env);
      },
    },
  },
};

/** The handlers every trigger adds, for the Worker's default export. */
export const triggerHandlers: TriggerHandlers = Object.assign(
  {},
  ...Object.values(TRIGGERS).map((t) => (t.handlers === "fetch" ? {} : t.handlers)),
);
