/**
 * What the tool loop (tool-loop.ts) keeps and is given: the tools offered to the model, the
 * step's resumable state (its checkpoint), the plan an agent step hands it and what it returns.
 */
import type { Json, JsonObject } from "../bundle.ts";
import type { StepMetrics, ToolCallRecord } from "../engine/types.ts";
import type { ChatMessage, ModelRequest } from "../gateway/provider.ts";
import type { GroupModel } from "../gateway/select.ts";

/** What the model is told on its last turn, when no tools are offered any more. */
export const FINAL_TURN_PROMPT =
  "You have no tool calls left. Give your final answer now, in the required format, without calling tools.";

/** One tool as offered to the model. */
export interface OfferedTool {
  /** The name the model sees: the tool's own, or `<server>__<tool>` when two servers share it. */
  offered: string;
  /** The agent's name for the server. */
  server: string;
  tool: string;
  description: string | null;
  parameters: JsonObject;
}

/** The step's resumable state (saved masked by the run). */
export interface LoopState {
  v: 1;
  /** Model calls made so far by the loop. */
  turn: number;
  messages: ChatMessage[];
  /** null until the servers were asked for their tools. */
  tools: OfferedTool[] | null;
  /** The model that wrote the last reply (the conversation continues with it). */
  model: GroupModel | null;
  toolCalls: ToolCallRecord[];
  metrics: Omit<StepMetrics, "duration_ms">;
  /** Set once the loop produced its final answer and the step waits for a human (ktsu_needs_human). */
  final?: { output: Json };
}

export interface LoopPlan {
  system: string | null;
  user: string;
  json: boolean;
  schema: ModelRequest["jsonSchema"];
  maxTokens: number;
  maxTurns: number;
  /** Servers whose url host the caller picks: never sent a secret, unless private and allowed. */
  callerHostServers?: readonly string[];
}

export interface LoopResult {
  text: string;
  model: GroupModel;
  /** The conversation up to (not including) the final answer, for a repair call. */
  messages: ChatMessage[];
}
