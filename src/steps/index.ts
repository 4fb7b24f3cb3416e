/** The step executors by kind. A new step type is one file here plus its entry in this map. */
import type { Executors } from "../engine/run-host.ts";
import { executeAgent } from "./agent.ts";
import { executeTransform } from "./transform.ts";
import { executeWait } from "./wait.ts";
import { executeWebhook } from "./webhook.ts";

export const executors: Executors = {
  agent: executeAgent,
  transform: executeTransform,
  webhook: executeWebhook,
  wait: executeWait,
};
