/**
 * What every method of an A2A agent (a2a.ts) is given for one request (the workflow it serves, the
 * deployment, the request), and how each finds the task it names.
 */
import type { CompiledWorkflow, Json } from "../../bundle.ts";
import type { RunView } from "../../run/run-calls.ts";
import { runStub } from "../../run/run-rpc.ts";
import type { Deployed } from "../../run/start/reruns.ts";
import { callerState } from "../protocol-run.ts";
import { a2aError } from "./a2a-errors.ts";

export interface A2aContext {
  served: Deployed;
  env: Env;
  req: Request;
  carry: ((work: Promise<void>) => void) | undefined;
  key: string;
  wf: CompiledWorkflow;
}

/** The run of task `id`, when it is a run of this agent's workflow; -32001 otherwise. */
export async function taskRun(id: Json | undefined, ctx: A2aContext): Promise<{ view: RunView }> {
  const stub = typeof id === "string" ? runStub(ctx.env, id) : null;
  const view = stub ? await stub.view() : null;
  if (!view || view.envelope.workflow !== ctx.wf.name || view.kept === false)
    throw a2aError("TASK_NOT_FOUND", `no task ${String(id)} of this agent`, { taskId: String(id) });
  return { view };
}

/** What a task waiting for input says of it (approvals are read only then). */
export async function inputFacts(view: RunView, ctx: A2aContext) {
  if (callerState(view) !== "input_required") return null;
  const approvals = (await runStub(ctx.env, view.envelope.run_id)?.approvals()) ?? [];
  return { approvals, bundle: ctx.served.bundle };
}
