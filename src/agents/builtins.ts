/**
 * Built-in agents of the `core` namespace. The compiler resolves `core/<name>@<semver>`
 * (`@1` = newest 1.x) against this list and copies the chosen entry into the bundle; the agent
 * executor (src/steps/agent.ts, `planFor`) gives `builtin` agents their special handling: chat
 * sends `prompt`/`system` as they are and wraps the reply text as `{text}` (no JSON mode);
 * extract validates the reply against the `schema` param; classify validates `{label}` against
 * an enum of the `labels` param. The `outputSchema` here is the shape the compiler can rely on
 * for its `step.X.FIELD` checks (extract's shape is only known at run time).
 */
import type { CompiledAgent } from "../bundle.ts";

export interface BuiltinAgent extends Omit<CompiledAgent, "key"> {
  version: string;
}

export const BUILTIN_AGENTS: BuiltinAgent[] = [
  {
    name: "chat",
    version: "1.0.0",
    description: "Answers a prompt. Params: prompt, optional system. Output: {text}.",
    builtin: "chat",
    group: null,
    maxTurns: 1,
    paramsSchema: {
      type: "object",
      required: ["prompt"],
      properties: { prompt: { type: "string" }, system: { type: "string" } },
    },
    system: null,
    user: null,
    outputSchema: {
      type: "object",
      required: ["text"],
      properties: { text: { type: "string" } },
    },
  },
  {
    name: "extract",
    version: "1.0.0",
    description:
      "Extracts structured data from text. Params: text, schema. Output: an object valid against schema.",
    builtin: "extract",
    group: null,
    maxTurns: 1,
    paramsSchema: {
      type: "object",
      required: ["text", "schema"],
      properties: { text: { type: "string" }, schema: { type: "object" } },
    },
    system:
      "Extract the requested data from the user's text. Reply with one JSON object that is valid against the JSON Schema given, and nothing else.",
    user: null,
    outputSchema: null,
  },
  {
    name: "classify",
    version: "1.0.0",
    description: "Classifies text into one of the labels. Params: text, labels. Output: {label}.",
    builtin: "classify",
    group: null,
    maxTurns: 1,
    paramsSchema: {
      type: "object",
      required: ["text", "labels"],
      properties: {
        text: { type: "string" },
        labels: { type: "array", minItems: 1, items: { type: "string" } },
      },
    },
    system:
      'Classify the user\'s text into exactly one of the given labels. Reply with one JSON object {"label": "<one of the labels>"} and nothing else.',
    user: null,
    outputSchema: {
      type: "object",
      required: ["label"],
      properties: { label: { type: "string" } },
    },
  },
];
