/**
 * The Agent Card of a workflow served as an A2A agent (docs/a2a.md, "Agent Card"), at
 * `GET /a2a/{name}/.well-known/agent-card.json`, for anyone: what it is, where its JSON-RPC
 * interface answers (on the origin the rest of the API links to), its one skill, and how it
 * wants to be called (`invoke.auth` as A2A 1.0's security schemes).
 */
import type { CompiledWorkflow, JsonObject } from "../../bundle.ts";

export const PROTOCOL_VERSION = "1.0";
export const MODES = ["text/plain", "application/json"];

export function agentCard(wf: CompiledWorkflow, origin: string): JsonObject {
  const a2a = wf.a2a;
  const card: JsonObject = {
    name: wf.name,
    description: wf.description ?? a2a?.skill.description ?? wf.name,
    version: wf.version ?? "0.0.0",
    supportedInterfaces: [
      {
        url: `${origin}/a2a/${encodeURIComponent(wf.name)}`,
        protocolBinding: "JSONRPC",
        protocolVersion: PROTOCOL_VERSION,
      },
    ],
    provider: { organization: "workflow-edge", url: origin },
    capabilities: { streaming: true, pushNotifications: true, extendedAgentCard: false },
    defaultInputModes: MODES,
    defaultOutputModes: MODES,
    skills: [
      {
        id: wf.name,
        name: a2a?.skill.name ?? wf.name,
        description: a2a?.skill.description ?? wf.description ?? wf.name,
        tags: a2a?.skill.tags ?? [],
        examples: a2a?.skill.examples ?? [],
        inputModes: MODES,
        outputModes: MODES,
      },
    ],
  };
  const auth = wf.auth;
  if (auth && (auth.scheme === "bearer" || auth.scheme === "raw")) {
    const scheme: JsonObject =
      auth.scheme === "bearer"
        ? { httpAuthSecurityScheme: { scheme: "Bearer", description: "The workflow's token." } }
        : {
            apiKeySecurityScheme: {
              location: "header",
              name: auth.header,
              description: "The workflow's key.",
            },
          };
    card.securitySchemes = { workflow: scheme };
    card.securityRequirements = [{ schemes: { workflow: { list: [] } } }];
  }
  return card;
}
