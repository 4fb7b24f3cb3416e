import type { JsonObject, Template } from "./values.ts";

/**
 * The ways a run starts (docs/triggers.md), one name each. The Worker's table of triggers
 * (src/triggers/index.ts) is keyed by it, so a kind named here without its entry there does not
 * compile (docs/architecture.md, "Add a trigger").
 */
export const TRIGGER_KINDS = ["webhook", "cron", "queue", "email", "chat", "mcp", "a2a"] as const;

export type TriggerKind = (typeof TRIGGER_KINDS)[number];

/**
 * `invoke.email` (docs/triggers.md, "Email"): the recipient patterns a workflow takes (`*` is a
 * whole local part or a whole domain label) and the senders it accepts (null: any).
 */
export interface CompiledEmail {
  to: string[];
  from: string[] | null;
}

/**
 * `invoke.chat` (docs/protocols.md, "OpenAI-compatible endpoint"): the workflow served as the
 * model `<name>` of `POST /v1/chat/completions`.
 */
export interface CompiledChat {
  /** Rendered over `{messages, user, metadata}` of the request; null: `{messages}`. */
  params: Template | null;
  /** Rendered over `{output, step, params}` of the finished run; null: the output (a string as it is, else its JSON). */
  reply: Template | null;
  /**
   * The reply as the model writes it: a string field (`field`, a path of names into the JSON the
   * model writes) of the output of top-level agent step `step`, which streams; `field: null` when
   * the model's text is the field itself (`core/chat`'s `{text}`). Null: the whole reply is sent at
   * the run's end.
   */
  stream: { step: string; field: string[] | null } | null;
}

/** `invoke.mcp` (docs/protocols.md, "MCP server"): the workflow served as a tool of `POST /mcp`. */
export interface CompiledMcp {
  /** `invoke.mcp.title`, default the workflow's name. */
  title: string;
  /** `invoke.mcp.description`, default the workflow's. */
  description: string | null;
  /** The schema the build derives for the run's output, when it is an object schema (the tool's `outputSchema`). */
  outputSchema: JsonObject | null;
}

/** `invoke.a2a` (docs/a2a.md): the workflow served as its own A2A agent at `/a2a/{name}`. */
export interface CompiledA2a {
  /** The one skill its Agent Card lists. */
  skill: { name: string; description: string; tags: string[]; examples: string[] };
  /** Rendered over `{text, data, message, metadata}` of the message; null: its data part, else `{text}`. */
  params: Template | null;
}
