/**
 * The step kinds the compiler knows, one module each, in the order messages list them. Adding a
 * kind: its compiled type in `StepKinds` (src/bundle.ts), its module here, its line below (the
 * table is typed against `StepKinds`, so a missing entry does not compile), and its executor.
 */
import type { StepKinds } from "../../bundle.ts";
import { agentStep } from "./agent.ts";
import type { StepKindCompiler } from "./step-base.ts";
import { transformStep } from "./transform.ts";
import { waitStep } from "./wait.ts";
import { webhookStep } from "./webhook.ts";
import { workflowStep } from "./workflow.ts";

export const STEP_KIND_COMPILERS: { [K in keyof StepKinds]: StepKindCompiler<K> } = {
  agent: agentStep,
  workflow: workflowStep,
  transform: transformStep,
  webhook: webhookStep,
  wait: waitStep,
};

export { STEP_KINDS, type StepKind } from "../../bundle.ts";
