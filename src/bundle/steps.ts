/**
 * The compiled step kinds of the bundle (src/bundle.ts), and their traits: one table that every
 * place asking "does this kind fan out, retry, reach outside the run, get mocked, wait?" reads,
 * so a new kind that forgets a trait does not compile (docs/architecture.md, "Add a step kind").
 */
import type { JsonSchema, Template } from "./values.ts";

/** What every compiled step carries, whatever its kind. */
export interface StepBase {
  id: string;
  /** Direct dependencies (explicit depends_on, or the previous step, or none). */
  deps: string[];
  /** Transitive closure of deps: exactly the steps whose outputs `step.X` may read. */
  ancestors: string[];
  /** JMESPath (ids already quoted), evaluated against {params, env, step}. */
  condition: string | null;
  /**
   * The step's `output.schema` (ktsu's air-lock), validated against its output (a fan-out's
   * `{results}`); a mismatch fails the step with `output_schema_mismatch`. Absent: none.
   */
  outputSchema?: JsonSchema | null;
  /** `on_error: continue` (docs/file-format.md): a failure is recorded and dependents see `{error}`. Absent: fail. */
  onError?: "continue";
  /**
   * `compensate:` (docs/file-format.md, "Compensation"): what undoes the step once its run ends
   * failed or canceled. Only on kinds whose `compensates` trait is set. Absent: nothing.
   */
  compensate?: CompiledCompensation;
  /** `score:` (docs/file-format.md, "Scores"): scorers run after the step completes; absent: none. */
  score?: CompiledScorer[];
}

/**
 * One scorer of a step: `expr`, JMESPath over `{output, params, step}` (a boolean or a number 0..1),
 * evaluated as the step completes; or `judge`, an agent whose output says `{score, reason}`, called
 * after the run has answered, for a `sample` of runs chosen by run id.
 */
export interface CompiledScorer {
  name: string;
  expr?: string;
  judge?: { agent: string; params: Template };
  /** 0..1 (default 1). */
  sample: number;
}

/**
 * `variants:` of an agent step: the step's traffic split between arms by weight, the arm chosen
 * from a hash of `key` (default the run id) and the step's path; an arm may replace the agent
 * (same params and output schema) and/or the model group.
 */
export interface CompiledVariants {
  key: Template | null;
  arms: Array<{
    name: string;
    weight: number;
    agent: string | null;
    group: string | null;
    maxTokens: number | null;
  }>;
}

/**
 * How a completed step is undone: one webhook call or one sub-workflow run, tried up to
 * `retry.maxAttempts` times, each attempt within `timeoutS`. Its templates read what the step
 * read, plus `output` (the step's, or a fan-out item's) and `error` (the run's).
 */
export interface CompiledCompensation {
  webhook: {
    url: Template;
    method: HttpMethod;
    headers: Template | null;
    body: Template | null;
    sign: { secretEnv: string } | null;
  } | null;
  /** A sub-workflow (bundle key) and its rendered `input`. */
  workflow: { key: string; input: Template; webhooks: "execute" | "suppress" } | null;
  /** Default 10 attempts, back-off from 1 s doubling to 300 s. */
  retry: RetryPolicy;
  /** Per attempt; default 30. */
  timeoutS: number;
}

/** `retry` of a webhook or agent step (and each of its fan-out items), docs/file-format.md. */
export interface RetryPolicy {
  /** Attempts in all, 1..20. */
  maxAttempts: number;
  /** First back-off and its cap, ms (jitter below them). */
  backoffMs: number;
  maxBackoffMs: number;
}

/**
 * `for_each` of an agent, webhook or workflow step (docs/file-format.md): the step runs once per item
 * of the array `from` evaluates to; its output is `{"results": [...]}` in input order.
 */
export interface ForEach {
  /** JMESPath over {params, env, step, request} (ids quoted); must give an array. */
  from: string;
  /** Items in flight at once; null: all (always within the run's outbound limit). */
  concurrency: number | null;
  /** Keep the first N items; null: up to 1000, more fails the step (`too_many_items`). */
  maxItems: number | null;
  /** 0: fail at the first failed item; N: tolerate N; -1: tolerate all. */
  maxFailures: number;
}

/**
 * Every step kind by name, with its compiled form: the compiler's table of step kinds
 * (src/compiler/step-kinds/) and the runtime's table of executors (src/steps/index.ts) are typed
 * against it, so a kind missing from either does not compile.
 */
export interface StepKinds {
  agent: AgentStep;
  workflow: WorkflowStep;
  transform: TransformStep;
  webhook: WebhookStep;
  wait: WaitStep;
}

export type CompiledStep = StepKinds[keyof StepKinds];

export interface AgentStep extends StepBase {
  /** `retry`; absent: the kind's default (webhook: 3 attempts, agent: 1). */
  retry?: RetryPolicy;
  /** Fan-out over an array; absent: the step runs once. */
  forEach?: ForEach;
  kind: "agent";
  /** Key into Bundle.agents. */
  agent: string;
  params: Template;
  /** Step override of the agent's group, already checked to exist. */
  group: string | null;
  maxTokens: number | null;
  /**
   * `confidence_threshold` (0..1): an output whose `ktsu_confidence` is below it is reflected on
   * (with `prompt.reflect`) or fails the step. Absent or null: no threshold.
   */
  confidenceThreshold?: number | null;
  /**
   * `stream: true` (docs/agents-and-tools.md, "Streaming"): the provider is called in its streaming
   * mode and each text chunk of the final answer reaches listeners as an `output.delta`. Absent: no.
   */
  stream?: true;
  /**
   * Tool servers whose url host the caller picks (from params, the request or a step output, also
   * through the inputs of the workflow steps that run this one): at run time they are refused a
   * secret unless their host is private and private hosts are allowed.
   */
  callerHostServers?: string[];
  /** `variants:` (docs/file-format.md, "Variants"); absent: none. */
  variants?: CompiledVariants;
}

export interface WorkflowStep extends StepBase {
  /** Fan-out over an array; absent: the step runs once. */
  forEach?: ForEach;
  kind: "workflow";
  /** Key into Bundle.workflows. */
  workflow: string;
  input: Template;
  webhooks: "execute" | "suppress";
}

/** A signal's name: what a wait step declares and what the signal routes accept (docs/http-api.md). */
export const SIGNAL_NAME = /^[a-z0-9_-]{1,64}$/;

/**
 * The `wait` step (docs/file-format.md): exactly one of a signal (by name, optionally by key, with a timeout
 * and a schema for its body), a sleep of `forS` seconds, or a sleep until a time.
 */
export interface WaitStep extends StepBase {
  kind: "wait";
  signal: {
    /** `[a-z0-9_-]`, 1..64. */
    name: string;
    /** Lets a sender that knows no run id signal it (`POST /workflows/{wf}/signals/{name}/{key}`). */
    key: Template | null;
    timeoutS: number;
    schema: JsonSchema | null;
  } | null;
  forS: number | null;
  /** Renders to an RFC 3339 time. */
  until: Template | null;
}

export interface TransformStep extends StepBase {
  kind: "transform";
  /** Explicit inputs; null means: the only dependency's output, a deep merge of several, or params. */
  inputs: Template[] | null;
  ops: TransformOp[];
  outputSchema: JsonSchema | null;
}

export type TransformOp =
  | { op: "map"; expr: string }
  | { op: "filter"; expr: string }
  | { op: "sort"; field: string; order: "asc" | "desc" }
  | { op: "flatten" }
  | { op: "deduplicate"; field: string }
  | { op: "merge"; steps: string[] };

export type HttpMethod = "GET" | "POST" | "PUT" | "PATCH" | "DELETE";

export interface WebhookStep extends StepBase {
  /** `retry`; absent: the kind's default (webhook: 3 attempts, agent: 1). */
  retry?: RetryPolicy;
  /** Fan-out over an array; absent: the step runs once. */
  forEach?: ForEach;
  kind: "webhook";
  url: Template;
  method: HttpMethod;
  headers: Template | null;
  body: Template | null;
  /** Per attempt, default 30. */
  timeoutS: number;
  /** Standard Webhooks signing; the env var holds `whsec_<base64 key>`. */
  sign: { secretEnv: string } | null;
  /** The url can read a secret env var: messages and spans show its origin only. */
  urlReadsSecret?: true;
}

export type StepKind = keyof StepKinds;

/**
 * What every place that asks about a step kind reads. Each trait is required, so a new kind
 * without its line here does not compile; `fansOut` and `retries` must also agree with the
 * kind's compiled type (a `forEach` field, a `retry` field).
 */
export interface StepKindTraits {
  /** `for_each` and `output.schema` apply: the step may run once per item (records under its path). */
  fansOut: boolean;
  /** `retry` applies: the step makes calls outside the run that may be tried again. */
  retries: boolean;
  /**
   * Running it reaches outside the run (a request sent, a model called): its record is a
   * checkpoint, written when it finishes, so that after an eviction it is never run again
   * (docs/operations.md, "What a run writes").
   */
  effect: boolean;
  /**
   * How a workflow test stands in for it (docs/workflow-tests.md): `response` (each attempt
   * answers the mock's status, headers and body), `model` (the model's reply, or the output at
   * once), `output` (the output at once), or null: it runs for real.
   */
  mock: "response" | "model" | "output" | null;
  /** It waits for the world (a signal, the clock): its status is `waiting` meanwhile. */
  waits: boolean;
  /** `compensate` applies: it acts outside the run, so what it did can be undone. */
  compensates: boolean;
  /**
   * What the compiler knows of its output (for the warning on an unknown `step.X.FIELD`):
   * `result` ({result} checked by output.schema), `http` ({status, headers, body}), `schema`
   * (the agent's output.schema), `child` (the sub-workflow's last step), `signal` (the signal's
   * schema, or a sleep's {slept_s}).
   */
  output: "result" | "http" | "schema" | "child" | "signal";
}

type Has<K extends StepKind, F extends string> = F extends keyof StepKinds[K] ? true : false;

export const STEP_KIND_TRAITS = {
  agent: {
    fansOut: true,
    retries: true,
    effect: true,
    mock: "model",
    waits: false,
    output: "schema",
    compensates: true,
  },
  workflow: {
    fansOut: true,
    retries: false,
    effect: false,
    mock: null,
    waits: false,
    output: "child",
    compensates: true,
  },
  transform: {
    fansOut: false,
    retries: false,
    effect: false,
    mock: null,
    waits: false,
    output: "result",
    compensates: false,
  },
  webhook: {
    fansOut: true,
    retries: true,
    effect: true,
    mock: "response",
    waits: false,
    output: "http",
    compensates: true,
  },
  wait: {
    fansOut: false,
    retries: false,
    effect: false,
    mock: "output",
    waits: true,
    output: "signal",
    compensates: false,
  },
} as const satisfies {
  [K in StepKind]: StepKindTraits & { fansOut: Has<K, "forEach">; retries: Has<K, "retry"> };
};

/** The kinds a workflow test stands in for (their `mock` trait is set). */
export type MockedStepKind = {
  [K in StepKind]: (typeof STEP_KIND_TRAITS)[K]["mock"] extends null ? never : K;
}[StepKind];

/** The step kinds, in the order messages list them. */
export const STEP_KINDS = Object.keys(STEP_KIND_TRAITS) as StepKind[];

/** Kinds with a trait, e.g. `kindsWhere("fansOut")`: what messages and checks list. */
export function kindsWhere(trait: "fansOut" | "retries" | "effect" | "waits" | "compensates"): StepKind[] {
  return STEP_KINDS.filter((k) => STEP_KIND_TRAITS[k][trait]);
}

/** The step's `for_each`, or null when it runs once (or its kind never fans out). */
export function forEachOf(s: CompiledStep): ForEach | null {
  return STEP_KIND_TRAITS[s.kind].fansOut ? ((s as { forEach?: ForEach }).forEach ?? null) : null;
}

/** Whether a step fans out (`for_each`): its items are records under its path. */
export function isFanOut(s: CompiledStep): boolean {
  return forEachOf(s) !== null;
}

/** Whether running the step itself reaches outside the run (a fan-out's items carry their own effects). */
export function hasEffect(s: CompiledStep): boolean {
  return STEP_KIND_TRAITS[s.kind].effect && !isFanOut(s);
}
