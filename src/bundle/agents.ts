/**
 * The compiled agents, tool servers and model gateway of the bundle (src/bundle.ts): what an agent
 * step calls, and through which provider.
 */
import type { EnvDecl, Json, JsonSchema, Template } from "./values.ts";

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
  auth: CompiledServerAuth | null;
  params: Record<string, CompiledServerParam>;
  /** Per tool call (default 30). */
  timeoutS: number;
}

/**
 * How requests to the server authenticate (docs/agents-and-tools.md): a static header, or OAuth
 * (client credentials, or a refresh token), whose secrets are the server's `secret: true` params.
 */
export type CompiledServerAuth =
  | { scheme: "raw" | "bearer"; header: string; secret: Template }
  | {
      scheme: "oauth";
      clientId: Template;
      clientSecret: Template | null;
      refreshToken: Template | null;
      scopes: string[];
    };

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
 * The provider types of gateway.yaml (docs/agents-and-tools.md), by `type`. The compiler checks each
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
