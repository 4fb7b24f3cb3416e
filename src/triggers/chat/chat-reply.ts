/**
 * What a chat answer says of a finished run (docs/protocols.md, "OpenAI-compatible endpoint"): the
 * assistant's text (`invoke.chat.reply` over `{output, step, params}`, default the output, a string
 * as it is, else its JSON), the run's token totals as OpenAI's usage, the headers naming the run.
 */
import type { CompiledWorkflow, Json, JsonObject } from "../../bundle.ts";
import { HttpProblem } from "../../common/problem.ts";
import { renderOver, stringify } from "../../engine/substitute.ts";
import type { Envelope } from "../../run/envelope.ts";

/** The assistant's text: `invoke.chat.reply` over the finished run (default: the output, a string as it is). */
export function chatReply(wf: CompiledWorkflow, envelope: Envelope): string {
  const reply = wf.chat?.reply ?? null;
  if (reply === null) return stringify(envelope.output);
  const step: JsonObject = {};
  for (const s of envelope.steps) step[s.id] = s.output;
  let value: Json;
  try {
    value = renderOver(reply, { output: envelope.output, step, params: envelope.params });
  } catch {
    throw new HttpProblem(
      "response_failed",
      "the run completed, but invoke.chat.reply could not be rendered",
      {
        headers: { "x-should-retry": "false", "x-run-id": envelope.run_id },
      },
    );
  }
  return stringify(value);
}

/** The run's token totals as OpenAI's usage. */
export function usageOf(envelope: Envelope) {
  const { tokens_in, tokens_out } = envelope.totals;
  return { prompt_tokens: tokens_in, completion_tokens: tokens_out, total_tokens: tokens_in + tokens_out };
}

/** The headers every answer about a run carries: its id, also as the request id the OpenAI clients expose. */
export function runHeaders(runId: string): Record<string, string> {
  return { "x-run-id": runId, "x-request-id": runId };
}
