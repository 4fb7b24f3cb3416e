/**
 * Compiles workflows/gateway.yaml (ktsu-compatible): LLM providers and the model groups agent
 * steps pick from. Checks names and cross references (group -> provider, pricing -> model,
 * api_key -> declared env) so the runtime can trust them. What each provider type takes in
 * `config`, and its default base URL, come from PROVIDER_TYPES (src/bundle.ts).
 */
import {
  type CompiledGateway,
  type CompiledGroup,
  type CompiledProvider,
  PROVIDER_TYPES,
  type ProviderConfigField,
  type ProviderType,
  type ProviderTypeFacts,
} from "../bundle.ts";
import { hint } from "../common/did-you-mean.ts";
import type { DiagnosticSink } from "./diagnostics.ts";
import { declaredEnvRef, envRefName, readEnvDecls } from "./env-refs.ts";
import { checkStructure } from "./structure-check.ts";
import type { SourceFile } from "./yaml-source.ts";

const CONFIG_FIELDS: ProviderConfigField[] = ["base_url", "api_key", "max_tokens_field"];
const PROVIDER_NAMES = Object.keys(PROVIDER_TYPES) as ProviderType[];

export const EMPTY_GATEWAY: CompiledGateway = { env: [], providers: [], groups: [] };

export function compileGateway(file: SourceFile, sink: DiagnosticSink): CompiledGateway {
  checkStructure(file, "gatewayFile", sink);
  const data = (file.data ?? {}) as Record<string, unknown>;
  if (typeof data !== "object" || Array.isArray(data)) return EMPTY_GATEWAY;
  const env = readEnvDecls(file, data.env, sink);

  const providers: CompiledProvider[] = [];
  list(data.providers).forEach((raw, i) => {
    const p = raw as { name?: unknown; type?: unknown; config?: Record<string, unknown> };
    if (typeof p.name !== "string" || typeof p.type !== "string") return;
    if (providers.some((x) => x.name === p.name)) {
      sink.error(file.display, file.at(["providers", i, "name"]), `provider \`${p.name}\` is declared twice`);
      return;
    }
    const type = p.type as ProviderType;
    const facts: ProviderTypeFacts | null = Object.hasOwn(PROVIDER_TYPES, type) ? PROVIDER_TYPES[type] : null;
    // An unknown type (the format check reported it) is read like an HTTP provider.
    const takes = (f: ProviderConfigField) => facts === null || facts.config.includes(f);
    const config = p.config && typeof p.config === "object" ? p.config : {};
    for (const k of CONFIG_FIELDS) {
      if (!(k in config) || takes(k)) continue;
      const owners = PROVIDER_NAMES.filter((t) =>
        (PROVIDER_TYPES[t].config as readonly string[]).includes(k),
      );
      sink.error(
        file.display,
        file.at(["providers", i, "config", k], "key"),
        facts?.binding
          ? `provider \`${p.name}\`: ${type} uses the Worker's ${facts.binding} binding; \`${k}\` does not apply`
          : `provider \`${p.name}\`: \`${k}\` does not apply to type \`${type}\` (only to ${owners.map((t) => `\`${t}\``).join(", ")})`,
      );
    }
    let baseUrl: string | null = null;
    let apiKeyEnv: string | null = null;
    if (takes("base_url")) {
      baseUrl = facts?.defaultBaseUrl ?? null;
      const b = config.base_url;
      if (typeof b === "string") {
        if (envRefName(b) !== null) {
          const name = declaredEnvRef(file, ["providers", i, "config", "base_url"], b, env, sink);
          if (name) baseUrl = `env:${name}`;
        } else if (!/^https?:\/\/[^/\s]+/.test(b)) {
          sink.error(
            file.display,
            file.at(["providers", i, "config", "base_url"]),
            `provider \`${p.name}\`: \`base_url\` must be an http(s) URL or exactly \`{{ env.NAME }}\`, got \`${b}\``,
          );
        } else {
          baseUrl = b.replace(/\/+$/, "");
        }
      }
    }
    if (takes("api_key") && config.api_key !== undefined) {
      apiKeyEnv = declaredEnvRef(file, ["providers", i, "config", "api_key"], config.api_key, env, sink);
    }
    const field = config.max_tokens_field;
    const maxTokensField =
      takes("max_tokens_field") && (field === "max_tokens" || field === "max_completion_tokens")
        ? field
        : null;
    providers.push({ name: p.name, type, baseUrl, apiKeyEnv, ...(maxTokensField ? { maxTokensField } : {}) });
  });

  const groups: CompiledGroup[] = [];
  list(data.model_groups).forEach((raw, i) => {
    const g = raw as Record<string, unknown>;
    if (typeof g.name !== "string") return;
    if (groups.some((x) => x.name === g.name)) {
      sink.error(
        file.display,
        file.at(["model_groups", i, "name"]),
        `model group \`${g.name}\` is declared twice`,
      );
      return;
    }
    const models: CompiledGroup["models"] = [];
    list(g.models).forEach((m, j) => {
      if (typeof m !== "string" || !m.includes("/")) return;
      const slash = m.indexOf("/");
      const provider = m.slice(0, slash);
      const model = m.slice(slash + 1);
      if (!providers.some((p) => p.name === provider)) {
        sink.error(
          file.display,
          file.at(["model_groups", i, "models", j]),
          `model group \`${g.name}\`: unknown provider \`${provider}\` in \`${m}\`${hint(
            provider,
            providers.map((p) => p.name),
          )}`,
        );
        return;
      }
      models.push({ provider, model });
    });
    const pricing: CompiledGroup["pricing"] = {};
    list(g.pricing).forEach((raw2, j) => {
      const e = raw2 as { model?: unknown; input_per_million?: unknown; output_per_million?: unknown };
      if (
        typeof e.model !== "string" ||
        typeof e.input_per_million !== "number" ||
        typeof e.output_per_million !== "number"
      ) {
        return;
      }
      if (!models.some((m) => m.model === e.model)) {
        sink.error(
          file.display,
          file.at(["model_groups", i, "pricing", j, "model"]),
          `model group \`${g.name}\`: pricing for \`${e.model}\`, which is not one of its models${hint(
            e.model,
            models.map((m) => m.model),
          )}`,
        );
        return;
      }
      pricing[e.model] = { inputPerMillion: e.input_per_million, outputPerMillion: e.output_per_million };
    });
    groups.push({
      name: g.name,
      models,
      strategy: g.strategy === "cost_optimized" ? "cost_optimized" : "round_robin",
      defaultMaxTokens: typeof g.default_max_tokens === "number" ? g.default_max_tokens : 1024,
      ...(typeof g.default_temperature === "number" ? { defaultTemperature: g.default_temperature } : {}),
      pricing,
    });
  });

  return { env, providers, groups };
}

/** Models of the group that have no price (a budget cannot be enforced on them). */
export function unpricedModels(group: CompiledGroup): string[] {
  return group.models.filter((m) => !group.pricing[m.model]).map((m) => `${m.provider}/${m.model}`);
}

function list(v: unknown): unknown[] {
  // Not filtered: indexes must stay those of the file for positions. Entries are checked one by one.
  return Array.isArray(v) ? v.map((x) => x ?? {}) : [];
}
