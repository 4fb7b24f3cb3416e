/**
 * The compensation phase of a run that ended failed or canceled (docs/file-format.md,
 * "Compensation"): its compensations run one at a time in the plan's order
 * (compensation-plan.ts), each through the same webhook executor as a step (so it inherits its
 * retries, timeouts, URL policy and signing), sent with `Idempotency-Key: <run_id>:<path>:compensate`
 * on every attempt. A compensation that fails after its attempts is `failed` and the next one
 * still runs.
 *
 * Durable without a second engine: the progress is the run document's `compensation`, written
 * once per compensation when it ends (the last one carries the phase's own status). A run evicted
 * or killed mid-compensation finds it `pending` or `running` when it is loaded again and sends it
 * again, with the same key: at most once in effect, never skipped.
 */
import type { CompiledCompensation, WebhookStep } from "../../bundle.ts";
import { createLedger } from "../../engine/budget.ts";
import type { Masker } from "../../engine/mask.ts";
import { retryWork } from "../../engine/retry.ts";
import { runPipeline } from "../../engine/scheduler.ts";
import { declaredEnv, stringEnv } from "../../engine/secrets.ts";
import { render } from "../../engine/substitute.ts";
import type { StepTracer } from "../../engine/trace.ts";
import { emptyMetrics, type StepContext, StepError, type StepRecord } from "../../engine/types.ts";
import { compensationEvent, type RunEvent } from "../events/events.ts";
import type { CompensationStep, RunDoc } from "../run-doc.ts";
import { compensationPlan, type PlannedCompensation } from "./compensation-plan.ts";
import { type LifecycleRuntime, worldOf } from "./run-engine.ts";

/** What the phase needs of its run. */
export interface CompensationHost {
  doc(): RunDoc | null;
  records(): ReadonlyMap<string, StepRecord>;
  runtime: LifecycleRuntime;
  masker(): Masker;
  /** Writes the document (one row). */
  save(doc: RunDoc): void;
  /** A compensation started or ended (the run's live listeners hear it). */
  event(ev: RunEvent): void;
  /** The phase has ended (its status is set and written). */
  ended(): void;
  /** Where one compensation's attempts are traced (none: no trace is exported). */
  tracer(path: string): StepTracer | undefined;
  /** One compensation ended: its span joins the run's trace. */
  traced(st: CompensationStep): void;
}

export class Compensator {
  private readonly host: CompensationHost;
  /** The phase runs in this incarnation (memory only). */
  private running = false;
  private controller: AbortController | null = null;
  private done: Promise<void> = Promise.resolve();

  constructor(host: CompensationHost) {
    this.host = host;
  }

  /** Whether compensations are still to run (stored as running, or running here). */
  get pending(): boolean {
    return this.running || this.host.doc()?.compensation?.status === "running";
  }

  /** Runs what is left of the phase, unless it runs already. */
  start(): void {
    if (this.running || this.host.doc()?.compensation?.status !== "running") return;
    this.running = true;
    this.controller = new AbortController();
    this.done = this.loop(this.controller.signal).finally(() => {
      this.running = false;
    });
  }

  /** Resolves once the phase has stopped running here (at once when it does not run). */
  settled(): Promise<void> {
    return this.done;
  }

  /**
   * Every failed compensation is tried once more (its retries as declared); how many. A call while
   * earlier ones are being tried again finds them no longer failed, so each is tried once.
   */
  retryFailed(): number {
    const doc = this.host.doc();
    const comp = doc?.compensation;
    if (!doc || !comp) return 0;
    let n = 0;
    for (const st of comp.steps) {
      if (st.status !== "failed") continue;
      st.status = "pending";
      n++;
    }
    if (n === 0) return 0;
    comp.status = "running";
    this.host.save(doc);
    this.start();
    return n;
  }

  /** The run's storage is gone: nothing more is sent. */
  stop(): void {
    this.controller?.abort(new Error("the run was deleted"));
    this.controller = null;
  }

  private async loop(signal: AbortSignal): Promise<void> {
    const { host } = this;
    const now = () => new Date(host.runtime.clock.now()).toISOString();
    let plan: Map<string, PlannedCompensation> | null = null;
    for (;;) {
      const doc = host.doc();
      const comp = doc?.compensation;
      if (!doc || !comp || signal.aborted) return;
      const st = comp.steps.find((s) => s.status === "pending" || s.status === "running");
      if (!st) break;
      if (plan === null) plan = planOf(doc, host);
      const planned = plan.get(st.step);
      st.status = "running";
      st.started_at ??= now();
      host.event(compensationEvent("compensation.started", st, st.started_at));
      const outcome = planned
        ? await this.execute(doc, planned, signal)
        : {
            attempts: 0,
            error: { code: "internal_error", message: "the step is not in the run's definition" },
          };
      if (signal.aborted || host.doc() !== doc) return;
      st.attempts += outcome.attempts;
      st.error = outcome.error;
      st.status = outcome.error === null ? "complete" : "failed";
      st.finished_at = now();
      // The last one carries the phase's status in the same write.
      if (!comp.steps.some((s) => s.status === "pending" || s.status === "running"))
        comp.status = comp.steps.some((s) => s.status === "failed") ? "failed" : "complete";
      host.save(doc);
      host.traced(st);
      host.event(
        compensationEvent(
          st.status === "complete" ? "compensation.completed" : "compensation.failed",
          st,
          st.finished_at,
        ),
      );
    }
    const doc = host.doc();
    const comp = doc?.compensation;
    if (doc && comp && comp.status === "running") {
      comp.status = comp.steps.some((s) => s.status === "failed") ? "failed" : "complete";
      host.save(doc);
    }
    host.ended();
  }

  /** One compensation with its retries: how many attempts it made, and its error (null: it completed). */
  private async execute(
    doc: RunDoc,
    p: PlannedCompensation,
    signal: AbortSignal,
  ): Promise<{ attempts: number; error: { code: string; message: string } | null }> {
    const { runtime } = this.host;
    const masker = this.host.masker();
    const c = p.compensate;
    const metrics = emptyMetrics();
    if (c.workflow) return this.executeWorkflow(doc, p, c.workflow, signal);
    if (!c.webhook) return { attempts: 0, error: { code: "internal_error", message: "no webhook to send" } };
    const step: WebhookStep = {
      id: `${p.path}:compensate`,
      deps: [],
      ancestors: [],
      condition: null,
      kind: "webhook",
      url: c.webhook.url,
      method: c.webhook.method,
      headers: c.webhook.headers,
      body: c.webhook.body,
      sign: c.webhook.sign,
      timeoutS: c.timeoutS,
      retry: c.retry,
    };
    const start = runtime.clock.now();
    // Its own time: every attempt and back-off of its retry policy (the run's deadline may have passed).
    const budgetMs = c.retry.maxAttempts * (c.timeoutS * 1000 + c.retry.maxBackoffMs);
    const ctx: StepContext = {
      bundle: doc.def,
      runId: doc.run_id,
      path: `${p.path}:compensate`,
      workflow: p.wf,
      scope: { ...p.scope, error: (doc.error ?? null) as StepContext["scope"]["error"] },
      signal,
      deadline: start + budgetMs,
      env: stringEnv(runtime.env),
      fetch: runtime.fetch,
      metrics,
      budget: { capUsd: null, reserve: async () => ({ settle: () => {} }) },
      clock: runtime.clock,
      holdsSecret: (text) => masker.maskText(text) !== text,
      trace: this.host.tracer(p.path),
    };
    try {
      await runtime.executors.webhook(step, ctx);
      return { attempts: Math.max(1, metrics.attempts), error: null };
    } catch (err) {
      return { attempts: metrics.attempts, error: errorOf(err, masker) };
    }
  }

  /**
   * A sub-workflow as the compensation: its pipeline runs whole on each attempt (its steps' paths
   * are `<path>:compensate/<step>`, so a webhook inside sends the same Idempotency-Key every
   * time), each attempt within `timeoutS`, tried as `retry` says. Its records are not kept: the
   * compensation's own record says how it went. It may not wait for a human or a signal.
   */
  private async executeWorkflow(
    doc: RunDoc,
    p: PlannedCompensation,
    w: NonNullable<CompiledCompensation["workflow"]>,
    signal: AbortSignal,
  ): Promise<{ attempts: number; error: { code: string; message: string } | null }> {
    const { runtime } = this.host;
    const masker = this.host.masker();
    const c = p.compensate;
    const child = doc.def.workflows[w.key];
    if (!child)
      return {
        attempts: 0,
        error: {
          code: "internal_error",
          message: "the compensating workflow is not in the run's definition",
        },
      };
    const scope = { ...p.scope, error: (doc.error ?? null) as StepContext["scope"]["error"] };
    let attempts = 0;
    const refuse = () =>
      Promise.reject(new StepError("internal_error", "a compensation waits for no human and no signal"));
    try {
      const params = render(w.input, scope);
      await retryWork(
        {
          attempts: c.retry.maxAttempts,
          baseDelayMs: c.retry.backoffMs,
          maxBackoffMs: c.retry.maxBackoffMs,
          deadline: runtime.clock.now() + c.retry.maxAttempts * (c.timeoutS * 1000 + c.retry.maxBackoffMs),
          signal,
          clock: runtime.clock,
          retryable: () => true,
        },
        async () => {
          attempts++;
          const attempt = new AbortController();
          const stop = () => attempt.abort(signal.reason);
          signal.addEventListener("abort", stop, { once: true });
          const timer = runtime.clock.setTimer(
            () =>
              attempt.abort(new StepError("timeout", `the compensation took longer than ${c.timeoutS} s`)),
            c.timeoutS * 1000,
          );
          try {
            await runPipeline(
              {
                ...worldOf(doc, runtime, masker),
                restored: new Map(),
                records: new Map(),
                approvals: () => ({ request: refuse }),
                waits: () => ({ wait: refuse }),
                onStepFinished: () => {},
              },
              child,
              {
                prefix: `${p.path}:compensate/`,
                params,
                env: {},
                deadline: runtime.clock.now() + c.timeoutS * 1000,
                signal: attempt.signal,
                budget: createLedger(null),
                webhooksAllowed: w.webhooks === "execute",
              },
            );
          } catch (err) {
            throw attempt.signal.aborted && !signal.aborted ? attempt.signal.reason : err;
          } finally {
            timer();
            signal.removeEventListener("abort", stop);
          }
        },
      );
      return { attempts, error: null };
    } catch (err) {
      return { attempts, error: errorOf(err, masker) };
    }
  }
}

/** A failure as a compensation's error: its code and its message, masked. */
function errorOf(err: unknown, masker: Masker): { code: string; message: string } {
  if (err instanceof StepError) return { code: err.code, message: masker.maskText(err.message) };
  return { code: "internal_error", message: "the compensation failed" };
}

function planOf(doc: RunDoc, host: CompensationHost): Map<string, PlannedCompensation> {
  const root = doc.def.workflows[doc.workflow_key];
  if (!root) return new Map();
  const plan = compensationPlan(doc.def, root, host.records(), {
    params: doc.params,
    request: doc.request ?? { headers: {} },
    env: declaredEnv(root, host.runtime.env),
  });
  return new Map(plan.map((p) => [p.path, p]));
}
