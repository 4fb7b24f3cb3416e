/**
 * What the protocol triggers (docs/protocols.md: the OpenAI-compatible endpoint in chat/, the MCP
 * server in mcp/, A2A in a2a/) share once their run exists: waiting for its end, following its
 * events as they happen, and telling what state it is in, in the one vocabulary their protocols
 * map from (a task submitted, working, waiting for input, finished). Each protocol turns these into
 * its own shape; none of them reads a run any other way.
 */
import type { JsonObject } from "../bundle.ts";
import type { StepRecord } from "../engine/types.ts";
import type { Envelope } from "../run/envelope.ts";
import type { RunView } from "../run/run-calls.ts";
import { runStub } from "../run/run-rpc.ts";

/** How long one wait for a run's end lasts before it is asked again (a run may outlive any one call). */
const WAIT_SLICE_MS = 60_000;

/**
 * The run's envelope once it has ended (`first`: what starting it answered, if it had ended by
 * then); null when the run cannot be found (deleted meanwhile).
 */
export async function runEnd(
  env: Env,
  runId: string,
  first: Envelope | null = null,
): Promise<Envelope | null> {
  if (first && !isActive(first)) return first;
  const stub = runStub(env, runId);
  if (!stub) return null;
  for (;;) {
    const envelope = await stub.waitFinished(WAIT_SLICE_MS);
    if (envelope) return envelope;
    if ((await stub.view()) === null) return null;
  }
}

/** A run's status while it can still change. */
export function isActive(e: Pick<Envelope, "status">): boolean {
  return e.status === "queued" || e.status === "pending" || e.status === "running";
}

export interface RunEventFrame {
  type: string;
  data: JsonObject;
}

/**
 * The run's events as they happen (docs/http-api.md, "Streaming"): `run.started` first, the steps'
 * events and a streaming step's `output.delta`s, `run.completed` with the envelope last. Ends when
 * the run's stream closes, or when the caller stops reading (`signal`).
 */
export async function* runEvents(
  env: Env,
  runId: string,
  signal?: AbortSignal,
): AsyncGenerator<RunEventFrame> {
  const stub = runStub(env, runId);
  if (!stub) return;
  const res = await stub.fetch(new Request("https://run.internal/events?opening=1"));
  if (!res.ok || !res.body) return;
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  const stop = () => reader.cancel().catch(() => {});
  signal?.addEventListener("abort", stop, { once: true });
  let buffer = "";
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += value;
      for (let end = buffer.indexOf("\n\n"); end >= 0; end = buffer.indexOf("\n\n")) {
        const frame = parseFrame(buffer.slice(0, end));
        buffer = buffer.slice(end + 2);
        if (frame) yield frame;
      }
    }
  } finally {
    signal?.removeEventListener("abort", stop);
    await stop();
  }
}

/** One `event:`/`data:` frame of the run's own stream (its data is one JSON line). */
function parseFrame(text: string): RunEventFrame | null {
  let type = "";
  let data = "";
  for (const line of text.split("\n")) {
    if (line.startsWith("event: ")) type = line.slice(7);
    else if (line.startsWith("data: ")) data += line.slice(6);
  }
  if (type === "" || data === "") return null;
  try {
    return { type, data: JSON.parse(data) as JsonObject };
  } catch {
    return null;
  }
}

/**
 * A run's state as the protocols see it: `submitted` (pending, or queued by a flow key), `working`
 * (running, a durable sleep included), `input_required` (a step waits for an approval or a
 * signal), or how it ended.
 */
export type CallerState = "submitted" | "working" | "input_required" | "completed" | "failed" | "canceled";

/** What a run waits for while it is `input_required`. */
export interface Awaited {
  /** The waiting step's path (`parent/child`, `fan/0`). */
  step: string;
  kind: "approval" | "signal";
  /** The signal's name (`kind: "signal"`). */
  signal: string | null;
}

export function callerState(view: RunView): CallerState {
  const e = view.envelope;
  if (e.status === "complete") return "completed";
  if (e.status === "failed") return "failed";
  if (e.status === "canceled") return "canceled";
  if (e.status === "queued" || e.status === "pending") return "submitted";
  return awaitedBy(view).length > 0 ? "input_required" : "working";
}

/** The steps of a running run that wait for a person or a signal (a durable sleep waits for neither). */
export function awaitedBy(view: RunView): Awaited[] {
  const waits = new Map(view.graph.map((n) => [n.path, n.wait]));
  const out: Awaited[] = [];
  const walk = (steps: StepRecord[], prefix: string, owner: string | null) => {
    for (const s of steps) {
      // A fan-out's items are named by their index; their graph node is the fan-out's.
      const path = `${prefix}${s.id}`;
      const node = /^\d+$/.test(s.id) && owner !== null ? owner : path;
      if (s.status === "pending_approval") out.push({ step: path, kind: "approval", signal: null });
      const wait = waits.get(node);
      if (s.status === "waiting" && wait?.signal)
        out.push({ step: path, kind: "signal", signal: wait.signal });
      walk(s.steps ?? [], `${path}/`, path);
    }
  };
  walk(view.envelope.steps, "", null);
  return out;
}

/** Events after which a run may have started to wait for a person or a signal. */
const MAY_WAIT = new Set(["step.waiting", "step.pending_approval", "approval.requested"]);

/**
 * The run's view once it has ended or waits for input (an approval, a signal), following its
 * events; null when the run cannot be found. A durable sleep is neither: it goes on waiting.
 */
export async function settled(env: Env, runId: string, signal?: AbortSignal): Promise<RunView | null> {
  const stub = runStub(env, runId);
  if (!stub) return null;
  const first = await stub.view();
  if (!first || !isActive(first.envelope) || callerState(first) === "input_required") return first;
  for await (const ev of runEvents(env, runId, signal)) {
    if (ev.type === "run.completed") break;
    if (!MAY_WAIT.has(ev.type)) continue;
    const view = await stub.view();
    if (!view || !isActive(view.envelope) || callerState(view) === "input_required") return view;
  }
  return stub.view();
}
