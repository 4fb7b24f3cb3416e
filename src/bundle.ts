/**
 * The compiled form of workflows/ that the build writes and the Worker imports.
 *
 * This is the one contract between the compiler (scripts/, src/compiler/) and the runtime
 * (src/engine/, src/steps/, src/run/). The compiler does all structural work once: it resolves
 * paths, step ids, dependencies, templates and schemas, and rewrites expressions so that
 * hyphenated step ids are quoted (`step.post-result.x` -> `step."post-result".x`). The runtime
 * trusts the bundle and never re-validates structure.
 */

import type { CompiledAgent, CompiledGateway } from "./bundle/agents.ts";
import type { CompiledStep } from "./bundle/steps.ts";
import type { CompiledA2a, CompiledChat, CompiledEmail, CompiledMcp } from "./bundle/triggers.ts";
import type { EnvDecl, JsonObject, JsonSchema, Template } from "./bundle/values.ts";

export * from "./bundle/agents.ts";
export * from "./bundle/steps.ts";
export * from "./bundle/triggers.ts";
export * from "./bundle/values.ts";

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
  /** When `npm run build` wrote it (ISO 8601; outside the hash): `GET /v1/models`' `created`. */
  builtAt?: string;
  /**
   * Under `npm start` only: the last build failed with these diagnostics (`file:line:col: message`),
   * and this is the last good bundle; the Worker answers 503 `build_failed` naming them until a
   * build passes (docs/errors-and-limits.md). `npm run build` and a deploy never write it.
   */
  buildErrors?: string[];
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
  /** `invoke.headers`, `invoke.response`, `invoke.rate_limit` (docs/triggers.md). */
  invoke: CompiledInvoke;
  /** `schedule` entries: one run per entry whose cron fires (root workflows only). */
  schedule: CompiledSchedule[];
  /** `invoke.queue`: the Cloudflare Queue whose messages each start a run (root workflows only). */
  queue: string | null;
  /** `invoke.email`: the addresses whose mail starts a run (root workflows only). */
  email: CompiledEmail | null;
  /** `invoke.chat`: served as a model of `POST /v1/chat/completions` (root workflows only). */
  chat: CompiledChat | null;
  /** `invoke.mcp`: served as a tool of `POST /mcp` (root workflows only). */
  mcp: CompiledMcp | null;
  /** `invoke.a2a`: served as an A2A agent at `/a2a/{name}` (root workflows only). */
  a2a: CompiledA2a | null;
  /**
   * `search:` (root workflows): at most 4 keys, each a template over `params` and `request`,
   * rendered when a run starts and kept in its listing entry (docs/http-api.md, "Search keys").
   */
  search?: Record<string, Template>;
  policy: {
    /** null: no budget. */
    costBudgetUsd: number | null;
    /** Whole-run deadline in seconds (default 300, max 86400). */
    timeoutS: number;
    /** True when the file set timeout_s itself (a child only tightens the parent's deadline then). */
    timeoutSet: boolean;
    /** `model_policy.score_budget_usd`: what judging one run may cost (absent: 0.05). */
    scoreBudgetUsd?: number;
  };
  /** In pipeline order. The run's output is the output of the last one. */
  steps: CompiledStep[];
  /** `cancel_on:` (root workflows): keyed signals that cancel the runs invoked with their key. */
  cancelOn?: CompiledCancelOn[];
  /** `notify:` (root workflows): where to hear about finished runs (docs/file-format.md); [] when absent. */
  notify?: CompiledNotify[];
  /**
   * Top-level `webhooks:` of the file (ktsu's side of the dual opt-in): `suppress` silences this
   * file's webhooks when it runs as a sub-workflow, whatever the calling step says. Absent or
   * `execute`: the calling step decides. No effect on a root run.
   */
  webhooks?: "execute" | "suppress";
  /**
   * `history: failures` (docs/operations.md, "Express runs"): a run that completes before its
   * answer keeps no record of its own (still listed; `GET /runs/{id}` is 410 `run_not_kept`).
   */
  history?: "failures";
  /**
   * `residency` (root workflows; docs/operations.md, "Jurisdictions"): every Durable Object that
   * holds the runs' data is created in this jurisdiction. Absent: none.
   */
  residency?: Residency;
}

/** The Durable Object jurisdictions a workflow's runs can be kept in (`residency`). */
export const RESIDENCIES = ["eu", "us", "fedramp", "fedramp-high"] as const;
export type Residency = (typeof RESIDENCIES)[number];

/**
 * A run id: its object's 64 hex digits, after its jurisdiction and a `-` when it has one
 * (`eu-…`: src/run/jurisdiction.ts). Groups: the jurisdiction, the hex id.
 */
export const RUN_ID_PATTERN = `^(?:(${RESIDENCIES.join("|")})-)?([0-9a-f]{64})$`;

/** One `notify:` entry: a POST to `url` after a run ends in one of `on`. */
export interface CompiledNotify {
  /** Reads only `env`. */
  url: Template;
  /** Final statuses, and `compensation_failed` (a compensation of the run failed after its attempts). */
  on: Array<"complete" | "failed" | "canceled" | "compensation_failed">;
  /** Standard Webhooks signing; the env var holds `whsec_<base64 key>`. */
  sign: { secretEnv: string } | null;
  /** `retry.schedule_s`: the wait before each attempt (absent: the default schedule, docs/triggers.md). */
  retry?: { scheduleS: number[] } | null;
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
  /** `invoke.concurrency` (docs/triggers.md); absent or null: no limit. */
  concurrency?: CompiledConcurrency | null;
  /** `invoke.throttle`: at most `limit` starts per key in any `periodMs` window. */
  throttle?: { limit: number; periodMs: number; key: Template | null } | null;
  /** `invoke.debounce`: invokes of a key within `periodMs` of each other make one run. */
  debounce?: { periodMs: number; maxWaitMs: number; key: Template | null } | null;
  /** `invoke.batch`: invokes of a key collected into one run (`params.items`). */
  batch?: { maxItems: number; maxWaitMs: number; key: Template | null } | null;
  /** `invoke.priority`: reads `params` and `request`; an integer -100..100 (clamped), anything else 0. */
  priority?: Template | null;
}

export interface CompiledConcurrency {
  /** 1..100 runs of one key active at once. */
  limit: number;
  key: Template | null;
  /** What an invoke finding the key full does (absent: `queue`). */
  onFull?: "queue" | "skip" | "replace";
}

/** A `cancel_on` entry: a keyed signal of this name cancels the runs invoked with that key. */
export interface CompiledCancelOn {
  signal: string;
  /** Rendered from each invoke's params and request; null: one key for the workflow. */
  key: Template | null;
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
  /**
   * In UTC: exactly as in wrangler.toml `[triggers] crons` (the event's `cron` is compared to it).
   * In another zone: read against that zone's wall-clock time (src/common/local-time.ts).
   */
  cron: string;
  /** The IANA zone the cron's times are in (`UTC` by default). */
  timezone: string;
  params: JsonObject;
}
