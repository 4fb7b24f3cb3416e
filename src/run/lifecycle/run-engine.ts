/**
 * Starts (or, after an eviction, resumes) a run's pipeline: the host the scheduler sees
 * (src/engine/scheduler.ts) built from the run's document, its records, its store, its books and
 * the runtime (the Worker's executors and fetch, or a workflow test's mocks). The lifecycle
 * (lifecycle.ts) decides when; this module only wires.
 */
import type { CompiledWorkflow, Json } from "../../bundle.ts";
import { createLedger, type LedgerState } from "../../engine/budget.ts";
import type { Clock } from "../../engine/clock.ts";
import type { Masker } from "../../engine/mask.ts";
import { type Executors, RunAbort, type RunHost } from "../../engine/run-host.ts";
import { runPipeline } from "../../engine/scheduler.ts";
import { declaredEnv, stringEnv } from "../../engine/secrets.ts";
import { createStreamMasker } from "../../engine/stream-mask.ts";
import type { ApprovalHost, StepContext, StepRecord, ToolHost } from "../../engine/types.ts";
import type { RunDoc } from "../run-doc.ts";
import type { RunStore } from "../run-store.ts";
import type { RunBooks } from "./run-books.ts";

/** What the run's steps are given to reach the world: the Worker's, or a test case's mocks. */
export interface LifecycleRuntime {
  /** The environment (Worker bindings and vars, or a test case's env): secrets, declared env, keys. */
  env: Record<string, unknown>;
  executors: Executors;
  /** Outbound requests of steps (already limited to the run's outbound limit). */
  fetch: StepContext["fetch"];
  tools?: ToolHost;
  ai?: RunHost["ai"];
  clock: Clock;
  outboundLimit: number;
  /** Private and loopback hosts may be called (tests, local development). */
  allowPrivate: boolean;
  /** How approval notifications are sent (never called in workflow tests). */
  notifyFetch: (input: string | Request, init?: RequestInit) => Promise<Response>;
}

/** What the engine tells the lifecycle as the run goes. */
export interface EngineEvents {
  /** The first step started (the run is `running`). */
  running(): void;
  stepChanged(path: string, rec: StepRecord): void;
  stepFinished(path: string, rec: StepRecord, effect: boolean): void;
  /** The pipeline ended, or the run was stopped (once per start). */
  ended(end: EngineEnd): void;
  /** A streaming step's answer: the next text (masked), or `null`: what came so far is void. */
  output?(path: string, text: string | null): void;
}

/** How a run's pipeline ended: completed, failed with an error, or stopped by a cancel or the deadline. */
export type EngineEnd =
  | { how: "complete" }
  | { how: "failed"; error: unknown }
  | { how: "canceled" | "timeout" };

export interface EngineRun {
  doc: RunDoc;
  wf: CompiledWorkflow;
  records: Map<string, StepRecord>;
  store: RunStore;
  books: RunBooks;
  masker: Masker;
  runtime: LifecycleRuntime;
  /** Wraps a step's approvals host (the test runner decides approvals from the case). */
  approvals?(path: string, inner: ApprovalHost): ApprovalHost;
  /** The run's trace and where its client spans go. */
  trace?: RunHost["trace"];
}

/**
 * Holds a run's pipeline while it runs: starts it (finished records in `records` are not run
 * again), and stops it for a cancel or the deadline, whatever its steps are doing.
 */
export class EngineDriver {
  private controller: AbortController | null = null;
  private engine: Promise<void> | null = null;

  get running(): boolean {
    return this.engine !== null;
  }

  start(r: EngineRun, events: EngineEvents): void {
    const controller = new AbortController();
    this.controller = controller;
    controller.signal.addEventListener("abort", () => events.ended(stopped(controller.signal.reason)), {
      once: true,
    });
    if (r.runtime.clock.now() >= Date.parse(r.doc.deadline)) {
      controller.abort(new RunAbort("timeout"));
      return;
    }
    this.engine = runEngine(r, controller.signal, {
      ...events,
      ended: (end) => {
        // A stop from outside ends the run through the abort listener, once.
        if (end.how === "failed" && end.error instanceof RunAbort) this.abort(end.error, events.ended);
        else events.ended(end);
      },
    });
  }

  /** Stops the run: through the running pipeline's signal, or at once when none runs. */
  abort(reason: RunAbort, ended: (end: EngineEnd) => void): void {
    if (this.controller) this.controller.abort(reason);
    else ended(stopped(reason));
  }

  /** The run has ended (or was deleted): late results find nothing to stop. */
  stop(): void {
    this.controller = null;
    this.engine = null;
  }
}

function stopped(reason: unknown): EngineEnd {
  return { how: reason instanceof RunAbort && reason.kind === "canceled" ? "canceled" : "timeout" };
}

/**
 * What a run's pipelines reach the world with (its own, and a compensation's sub-workflow:
 * run-compensation.ts): its definition and id, the environment, the executors, the masker,
 * outbound fetch, tool servers, Workers AI, the clock and the outbound limit.
 */
export function worldOf(
  doc: RunDoc,
  runtime: LifecycleRuntime,
  masker: Masker,
): Pick<
  RunHost,
  | "bundle"
  | "runId"
  | "env"
  | "executors"
  | "masker"
  | "fetch"
  | "tools"
  | "ai"
  | "now"
  | "clock"
  | "outboundLimit"
> {
  return {
    bundle: doc.def,
    runId: doc.run_id,
    env: stringEnv(runtime.env),
    executors: runtime.executors,
    masker,
    fetch: runtime.fetch,
    tools: runtime.tools,
    ai: runtime.ai,
    now: () => runtime.clock.now(),
    clock: runtime.clock,
    outboundLimit: runtime.outboundLimit,
  };
}

/** Runs the pipeline of `r.doc` to its end. */
function runEngine(r: EngineRun, signal: AbortSignal, events: EngineEvents): Promise<void> {
  const { doc, wf, store, books, runtime, masker } = r;
  const restored = new Map(r.records);
  const ledger = createLedger(wf.policy.costBudgetUsd, doc.ledger as unknown as LedgerState, (s) => {
    doc.ledger = s as unknown as Json;
    store.saveDoc(doc);
  });
  const host: RunHost = {
    ...worldOf(doc, runtime, masker),
    approvals: (path) => {
      const inner: ApprovalHost = {
        request: (req, signal, waiting) => books.approvals(doc).request(path, req, signal, waiting),
      };
      return r.approvals ? r.approvals(path, inner) : inner;
    },
    waits: (path) => ({
      wait: (req, signal, waiting, begun) => books.waits().wait(path, req, signal, waiting, begun),
    }),
    checkpoint: (path) => ({
      load: () => store.loadCheckpoint(path),
      // Masked like everything stored: a conversation can quote a secret passed to a tool server.
      save: (state) => store.saveCheckpoint(path, masker.maskJson(state)),
    }),
    trace: r.trace,
    // A re-run keeps the arms its old run's split steps ran.
    pinnedArm: (path) => doc.arms?.[path] ?? null,
    restored,
    records: r.records,
    onStepStarted: (path, rec) => {
      events.running();
      events.stepChanged(path, rec);
    },
    onStepChanged: (path, rec) => events.stepChanged(path, rec),
    onStepFinished: (path, rec, effect) => events.stepFinished(path, rec, effect),
    // A streaming step's text, masked as it comes (a secret split across chunks too), never stored.
    outputStream: (path) => {
      const output = events.output;
      if (!output) return undefined;
      // Made on the first chunk: most steps never stream, and cost nothing here.
      let masked: ReturnType<typeof createStreamMasker> | null = null;
      return {
        text: (chunk) => {
          masked ??= createStreamMasker(masker);
          const shown = masked.push(chunk);
          if (shown !== "") output(path, shown);
        },
        reset: () => {
          masked = null;
          output(path, null);
        },
        end: () => {
          const rest = masked?.flush() ?? "";
          if (rest !== "") output(path, rest);
        },
      };
    },
  };
  return runPipeline(host, wf, {
    prefix: "",
    params: doc.params,
    request: doc.request ?? { headers: {} },
    env: declaredEnv(wf, runtime.env),
    deadline: Date.parse(doc.deadline),
    signal,
    budget: ledger,
    webhooksAllowed: true,
  }).then(
    () => events.ended({ how: "complete" }),
    (error: unknown) => events.ended({ how: "failed", error }),
  );
}
