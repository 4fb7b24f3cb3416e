/**
 * The wait step (docs/file-format.md): waits, durably, through the run's waits host, for a signal (its body
 * becomes the output) or until a sleep ends (`{"slept_s": N}`). Nothing spins: the run object
 * sleeps until a signal arrives or its alarm wakes it; the run deadline still holds.
 */
import type { WaitStep } from "../bundle.ts";
import { systemClock } from "../engine/clock.ts";
import { render } from "../engine/substitute.ts";
import { StepError, type StepExecutor, type WaitRequest } from "../engine/types.ts";

export const executeWait: StepExecutor<WaitStep> = async (step, ctx) => {
  const host = ctx.waits;
  if (!host) throw new StepError("internal_error", "this run cannot wait");
  const now = (ctx.clock ?? systemClock).now();
  let req: WaitRequest;
  if (step.signal) {
    let key: string | null = null;
    if (step.signal.key) {
      const k = render(step.signal.key, ctx.scope);
      if (k === null || k === "" || typeof k === "object") {
        throw new StepError(
          "expression_error",
          `the wait's key rendered to ${JSON.stringify(k)}, not a string`,
        );
      }
      key = String(k);
    }
    req = {
      kind: "signal",
      name: step.signal.name,
      key,
      timeoutAt: Math.min(ctx.deadline, now + step.signal.timeoutS * 1000),
      schema: step.signal.schema,
    };
  } else if (step.forS !== null) {
    req = { kind: "sleep", until: now + step.forS * 1000, seconds: step.forS };
  } else {
    const text = step.until ? render(step.until, ctx.scope) : null;
    const at = typeof text === "string" && /^\d{4}-\d\d-\d\dT/.test(text) ? Date.parse(text) : Number.NaN;
    if (Number.isNaN(at)) {
      throw new StepError(
        "expression_error",
        `the wait's until rendered to ${JSON.stringify(text)}, not an RFC 3339 time`,
      );
    }
    req = { kind: "sleep", until: at, seconds: Math.max(0, Math.round(at - now) / 1000) };
  }
  return host.wait(req, ctx.signal, () => {});
};
