/**
 * The compiled form of workflows/ that the build writes and the Worker imports.
 *
 * This is the one contract between the compiler (scripts/, src/compiler/) and the runtime
 * (src/engine/, src/steps/, src/run/). The compiler does all structural work once: it resolves
 * paths, step ids, dependencies, templates and schemas, and rewrites expressions so that
 * hyphenated step ids are quoted (`step.post-result.x` -> `step."post-result".x`). The runtime
 * trusts the bundle and never re-validates structure.
 */

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

/** A JSON Schema object (draft 2020-12 unless `$schema` says otherwise). */
export type JsonSchema = JsonObject | boolean;

export interface Bundle {
  /** Format version of this bundle. */
  format: 1;
  /** SHA-256 (hex) of the bundle content without this field; a run is pinned to it. */
  hash: string;
  /** Every compiled workflow file, invocable or not, keyed by its path relative to workflows/. */
  workflows: Record<string, CompiledWorkflow>;
  /** Workflow `name` -> key in `workflows`, for every `workflows/*.workflow.yaml`. */
  invocable: Record<string, string>;
  /** Agents keyed by path relative to workflows/ (local) or by resolved ref (`core/chat@1.0.0`). */
  agents: Record<string, CompiledAgent>;
  gateway: CompiledGateway;
}

export interface EnvDecl {
  name: string;
  /** Defaults to true when the file omits it. */
  secret: boolean;
}

export interface CompiledWorkflow {
  /** Path relative to workflows/, e.g. `support-triage.workflow.yaml`. */
  key: string;
  name: string;
  version: string | null;
  description: string | null;
  visibility: "root" | "sub-workflow";
  paramsSchema: JsonSchema;
  /** Declared env (root workflows only; always [] for files used as sub-workflows). */
  env: EnvDecl[];
  auth: CompiledAuth | null;
  /** `invoke.headers`, `invoke.response`, `invoke.rate_limit` (SPEC section 5). */
  invoke: CompiledInvoke;
  /** `schedule` entries: one run per entry whose cron fires (root workflows only). */
  schedule: CompiledSchedule[];
  policy: {
    /** null: no budget. */
    costBudgetUsd: number | null;
    /** Whole-run deadline in seconds (default 300, max 86400). */
    timeoutS: number;
    /** True when the file set timeout_s itself (a child only tightens the parent's deadline then). */
    timeoutSet: boolean;
  };
  /** In pipeline order. The run's output is the output of the last one. */
  steps: CompiledStep[];
  /** `notify:` (root workflows): where to hear about finished runs (SPEC 12); [] when absent. */
  notify?: CompiledNotify[];
  /**
   * Top-level `webhooks:` of the file (ktsu's side of the dual opt-in): `suppress` silences this
   * file's webhooks when it runs as a sub-workflow, whatever the calling step says. Absent or
   * `execute`: the calling step decides. No effect on a root run.
   */
  webhooks?: "execute" | "suppress";
}

/** One `notify:` entry: a POST to `url` after a run ends in one of `on`. */
export interface CompiledNotify {
  /** Reads only `env`. */
  url: Template;
  on: Array<"complete" | "failed" | "canceled">;
  /** Standard Webhooks signing; the env var holds `whsec_<base64 key>`. */
  sign: { secretEnv: string } | null;
}

/** `invoke.auth`: a credential header (`raw`, `bearer`) or a sender's signature scheme. */
export type CompiledAuth = TokenAuth | SignatureAuth;

export interface TokenAuth {
  scheme: "raw" | "bearer";
  /** Header name, lower-cased. Default `authorization`. */
  header: string;
  /** Env vars holding accepted secrets (one, or several while a secret is rotated). */
  secretEnvs: string[];
}

export const SIGNATURE_SCHEMES = [
  "hmac",
  "github",
  "stripe",
  "slack",
  "standard-webhooks",
  "shopify",
  "linear",
  "twilio",
  "discord",
] as const;
export type SignatureScheme = (typeof SIGNATURE_SCHEMES)[number];

/** Whether a step fans out (`for_each`): its items are records under its path. */
export function isFanOut(s: CompiledStep): boolean {
  return s.kind !== "transform" && s.forEach !== undefined;
}

/** Whether an invoke's auth checks a sender's signature (every scheme but `raw` and `bearer`). */
export function isSignature(auth: CompiledAuth): auth is SignatureAuth {
  return auth.scheme !== "raw" && auth.scheme !== "bearer";
}

export interface SignatureAuth {
  scheme: SignatureScheme;
  /** Env vars holding the signing secrets (any one verifying is enough); [] for `discord`. */
  secretEnvs: string[];
  /** Largest distance in seconds between a signed timestamp and now (default 300). */
  toleranceS: number;
  /** `hmac` only: where the signature is and how it is written. */
  hmac: {
    header: string;
    prefix: string;
    algorithm: "sha1" | "sha256" | "sha512";
    encoding: "hex" | "base64";
  } | null;
  /** `twilio` only: the public URL configured at Twilio (null: the URL the Worker sees). */
  url: string | null;
  /** `discord` only: the application's Ed25519 public key, as hex or as an env var holding it. */
  publicKey: { hex: string } | { env: string } | null;
}

export interface CompiledInvoke {
  /** Declared request headers: `name` as sent (lower-cased), `key` as read (`x_github_event`). */
  headers: Array<{ name: string; key: string }>;
  response: CompiledResponse | null;
  rateLimit: CompiledRateLimit | null;
  /** `invoke.concurrency` (SPEC 13); absent or null: no limit. */
  concurrency?: { limit: number; key: Template | null } | null;
}

export interface CompiledResponse {
  /** How long an invoke without `Prefer: wait` waits for the run (1..60). */
  waitS: number;
  status: number;
  contentType: "application/json" | "text/plain" | "text/xml";
  /** Rendered against {params, env, step, request} once the run completed. */
  body: Template;
}

export interface CompiledRateLimit {
  /** Name of the `[[ratelimits]]` binding in wrangler.toml. */
  binding: string;
  /** null: the workflow name. Reads only `params` and `request`. */
  key: Template | null;
  /** The binding's period in seconds (10 or 60): what `Retry-After` says. */
  periodS: number;
}

export interface CompiledSchedule {
  /** Exactly as in wrangler.toml `[triggers] crons` (the event's `cron` is compared to it). */
  cron: string;
  params: JsonObject;
}

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
  /** `on_error: continue` (SPEC 12): a failure is recorded and dependents see `{error}`. Absent: fail. */
  onError?: "continue";
}

/** `retry` of a webhook or agent step (and each of its fan-out items), SPEC 12. */
export interface RetryPolicy {
  /** Attempts in all, 1..20. */
  maxAttempts: number;
  /** First back-off and its cap, ms (jitter below them). */
  backoffMs: number;
  maxBackoffMs: number;
}

/**
 * `for_each` of an agent, webhook or workflow step (SPEC section 8): the step runs once per item
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
  /** `retry` (SPEC 12); absent: the kind's default (webhook: 3 attempts, agent: 1). */
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
   * Tool servers whose url host the caller picks (from params, the request or a step output, also
   * through the inputs of the workflow steps that run this one): at run time they are refused a
   * secret unless their host is private and private hosts are allowed.
   */
  callerHostServers?: string[];
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

/** A signal's name (SPEC 13): what a wait step declares and what the signal routes accept. */
export const SIGNAL_NAME = /^[a-z0-9_-]{1,64}$/;

/**
 * The `wait` step (SPEC 13): exactly one of a signal (by name, optionally by key, with a timeout
 * and a schema for its body), a sleep of `forS` seconds, or a sleep until a time.
 */
export interface WaitStep extends StepBase {
  kind: "wait";
  /** A wait does not fan out (`for_each` is a build error on it). */
  forEach?: undefined;
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
  /** `retry` (SPEC 12); absent: the kind's default (webhook: 3 attempts, agent: 1). */
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
}

/**
 * A value with `{{ }}` substitutions, pre-parsed. Plain JSON without any `{{` is `lit`.
 * - `expr`: a string that, trimmed, is exactly one `{{ e }}`: keeps the value's JSON type.
 * - `concat`: text mixed with expressions: always a string (null -> "", non-strings -> compact
 *   JSON). A part with `encode: true` (a webhook URL after its first `?`) is passed through
 *   encodeURIComponent.
 */
export type Template =
  | { t: "lit"; v: Json }
  | { t: "expr"; e: string }
  | { t: "concat"; parts: Array<string | { e: string; encode?: true }> }
  | { t: "arr"; items: Template[] }
  | { t: "obj"; entries: Array<[string, Template]> };

export interface CompiledAgent {
  /** Key into Bundle.agents. */
  key: string;
  name: string;
  description: string | null;
  /** `local` for *.agent.yaml files; otherwise the built-in it implements. */
  builtin: "chat" | "extract" | "classify" | null;
  /** Model group named by the agent file (null: the step's, else the first group). */
  group: string | null;
  maxTurns: number;
  paramsSchema: JsonSchema;
  /** Static system prompt. */
  system: string | null;
  /** User prompt template with `{{ params.X }}`; null: params are sent as JSON. */
  user: Template | null;
  outputSchema: JsonSchema | null;
  /** `prompt.reflect` (`{{ params.X }}` allowed); absent or null: no reflect call. */
  reflect?: Template | null;
  /**
   * The tool servers the agent may call (`servers:`). Absent in definitions compiled before
   * tools existed (a run stays pinned to the definition it started with), which means none.
   */
  servers?: CompiledServerRef[];
  /** Params whose schema says `secret: true`: never sent to the model (ktsu's secret marking). */
  secretParams?: string[];
}

/** One entry of an agent's `servers:` block, with the server file it points to compiled in. */
export interface CompiledServerRef {
  /** The agent's name for the server (`servers[].name`); tool_calls[].server shows it. */
  name: string;
  server: CompiledServer;
  /** Values for the server's params: literals or `{{ params.X }}` of the agent. */
  params: Record<string, Template>;
  /** `access.allowlist`; null: no `access`, every tool of the server is allowed. */
  allow: CompiledAllowEntry[] | null;
}

export interface CompiledAllowEntry {
  /** An exact tool name, `prefix*` or `*`. */
  pattern: string;
  approval: CompiledApprovalPolicy | null;
}

export interface CompiledApprovalPolicy {
  onReject: "fail" | "recover";
  /** Seconds; null: until the run's deadline. */
  timeoutS: number | null;
  timeoutBehavior: "fail" | "reject";
  /** Where the approval is POSTed when it is requested; templates read the agent's params. */
  notify: { url: Template; signSecret: Template | null } | null;
}

/** A compiled `*.server.yaml` (ktsu format): an MCP endpoint and how to reach it. */
export interface CompiledServer {
  /** Path relative to workflows/. */
  key: string;
  name: string;
  description: string | null;
  /** The MCP endpoint; `{{ params.X }}` reads the server's own params. */
  url: Template;
  auth: { header: string; scheme: "raw" | "bearer"; secret: Template } | null;
  params: Record<string, CompiledServerParam>;
  /** Per tool call (default 30). */
  timeoutS: number;
}

export interface CompiledServerParam {
  secret: boolean;
  /** The default; absent when the param has none (then the agent must give it). */
  default?: Json;
  description: string | null;
}

export interface CompiledGateway {
  /** Env vars the gateway reads (provider keys). */
  env: EnvDecl[];
  providers: CompiledProvider[];
  /** In file order; a step without a group uses the first. */
  groups: CompiledGroup[];
}

/** A `config` field of a provider entry in gateway.yaml. */
export type ProviderConfigField = "base_url" | "api_key" | "max_tokens_field";

/** What the build and the Worker need to know of a provider type besides its adapter. */
export interface ProviderTypeFacts {
  /** `config.base_url` when the entry gives none; null: reached through a Worker binding, not HTTP. */
  defaultBaseUrl: string | null;
  /** The Worker binding it calls instead (workers-ai: `AI`). */
  binding?: string;
  /** The `config` fields an entry of this type may set. */
  config: readonly ProviderConfigField[];
}

/**
 * The provider types of gateway.yaml (SPEC section 7), by `type`. The compiler checks each
 * entry's `config` against its line here and fills in the default base URL (written only here);
 * the Worker's adapters (`PROVIDERS` in src/gateway/complete.ts) are typed against the same
 * names, so a type without an adapter is a type error.
 */
export const PROVIDER_TYPES = {
  openai: {
    defaultBaseUrl: "https://api.openai.com/v1",
    config: ["base_url", "api_key", "max_tokens_field"],
  },
  anthropic: { defaultBaseUrl: "https://api.anthropic.com", config: ["base_url", "api_key"] },
  "workers-ai": { defaultBaseUrl: null, binding: "AI", config: [] },
} as const satisfies Record<string, ProviderTypeFacts>;
export type ProviderType = keyof typeof PROVIDER_TYPES;

export interface CompiledProvider {
  name: string;
  type: ProviderType;
  /** Without trailing slash, or `env:NAME` (read from the Worker's env); null for a binding. */
  baseUrl: string | null;
  /** Name of the env var holding the API key (from `{{ env.X }}`), or null. */
  apiKeyEnv: string | null;
  /**
   * `openai` only: the request field that carries the output token limit (`config.max_tokens_field`).
   * Absent: decided per call (src/gateway/openai.ts: `max_completion_tokens` for OpenAI's own API
   * and its o-series and gpt-5 models, else `max_tokens`).
   */
  maxTokensField?: "max_tokens" | "max_completion_tokens";
}

export interface CompiledGroup {
  name: string;
  /** `provider/model` pairs in file order. */
  models: Array<{ provider: string; model: string }>;
  strategy: "round_robin" | "cost_optimized";
  defaultMaxTokens: number;
  /** ktsu's `default_temperature`, sent as `temperature` on every call; absent: the provider's default. */
  defaultTemperature?: number;
  /** USD per million tokens, by model id (without provider prefix). Empty: costs 0. */
  pricing: Record<string, { inputPerMillion: number; outputPerMillion: number }>;
}
