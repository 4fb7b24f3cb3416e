/**
 * `SendStreamingMessage` and `SubscribeToTask` (docs/a2a.md, "Streaming"): SSE whose every `data:`
 * is a JSON-RPC response with one `StreamResponse`: the Task first, a status update at every state
 * change, a streaming agent step's text as artifact chunks (`artifactId: "output.delta"`, `append`
 * false on the first and after a reset, true after), the `output` artifact before the final status
 * update; the stream closes at a terminal or input-required state.
 */
import type { Json, JsonObject } from "../../bundle.ts";
import type { RunStatus } from "../../engine/types.ts";
import type { Envelope } from "../../run/envelope.ts";
import { runStub } from "../../run/run-rpc.ts";
import type { RpcId } from "../json-rpc.ts";
import { type CallerState, callerState, runEvents } from "../protocol-run.ts";
import type { A2aContext } from "./a2a-context.ts";
import { contextOf, outputArtifact, STATES, statusOf, taskOf } from "./a2a-task.ts";

const encoder = new TextEncoder();
const ENDED: Record<string, CallerState> = { complete: "completed", failed: "failed", canceled: "canceled" };

export function streamTask(
  ctx: A2aContext,
  runId: string,
  rpcId: RpcId,
  historyLength: number | null,
): Response {
  const { readable, writable } = new TransformStream<Uint8Array, Uint8Array>();
  const writer = writable.getWriter();
  const stop = new AbortController();
  writer.closed.catch(() => stop.abort());
  const send = (result: Json) =>
    writer
      .write(encoder.encode(`data: ${JSON.stringify({ jsonrpc: "2.0", id: rpcId, result })}\n\n`))
      .catch(() => stop.abort());
  follow(ctx, runId, send, historyLength, stop.signal)
    .catch(() => {})
    .finally(() => writer.close().catch(() => {}));
  return new Response(readable, {
    headers: { "content-type": "text/event-stream", "cache-control": "no-store", "x-accel-buffering": "no" },
  });
}

async function follow(
  ctx: A2aContext,
  runId: string,
  send: (r: Json) => Promise<void>,
  historyLength: number | null,
  signal: AbortSignal,
): Promise<void> {
  const stub = runStub(ctx.env, runId);
  const view = stub ? await stub.view() : null;
  if (!stub || !view) return;
  const facts = async () => ({ approvals: (await stub.approvals()) ?? [], bundle: ctx.served.bundle });
  let state = callerState(view);
  await send({ task: taskOf(view, state === "input_required" ? await facts() : null, { historyLength }) });
  if (state === "input_required" || ENDED[view.envelope.status]) return;
  const ids = { taskId: runId, contextId: contextOf(view.envelope) };
  const update = async (status: JsonObject) => send({ statusUpdate: { ...ids, status } });
  let append = false;
  for await (const ev of runEvents(ctx.env, runId, signal)) {
    const time = typeof ev.data.time === "string" ? ev.data.time : new Date().toISOString();
    if (ev.type === "output.delta" && typeof ev.data.text === "string") {
      await send({
        artifactUpdate: {
          ...ids,
          artifact: { artifactId: "output.delta", name: "output.delta", parts: [{ text: ev.data.text }] },
          append,
          lastChunk: false,
        },
      });
      append = true;
    } else if (ev.type === "output.reset") {
      append = false;
    } else if (ev.type === "run.completed") {
      const e = ev.data as unknown as Envelope;
      const ended = ENDED[e.status as RunStatus] ?? "failed";
      if (ended === "completed") {
        await send({
          artifactUpdate: { ...ids, artifact: outputArtifact(e.output), append: false, lastChunk: true },
        });
      }
      await update(statusOf({ envelope: e, graph: [], auth: null }, ended, null));
      return;
    } else if (
      ev.type === "step.waiting" ||
      ev.type === "step.pending_approval" ||
      ev.type === "approval.requested"
    ) {
      const now = await stub.view();
      if (!now) return;
      const next = callerState(now);
      if (next !== state) {
        state = next;
        await update(statusOf(now, next, next === "input_required" ? await facts() : null));
        if (next === "input_required") return;
      }
    } else if (ev.type.startsWith("step.") && state !== "working") {
      state = "working";
      await update({ state: STATES.working, timestamp: time });
    }
  }
}
