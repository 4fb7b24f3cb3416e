/**
 * How a step's (or a fan-out item's) record is kept while it runs: started and settled through
 * the one writer of statuses (step-status.ts) with its times and duration, its output checked
 * against output.schema, masked and bounded as recorded, its tool calls masked.
 */
import type { Json, JsonSchema } from "../bundle.ts";
import type { RunHost } from "./run-host.ts";
import { MAX_OUTPUT_BYTES, RunAbort } from "./run-host.ts";
import { describeViolations, validateJson } from "./schema.ts";
import { IN_FLIGHT, markFinished, markRunning, markSkipped } from "./step-status.ts";
import { emptyMetrics, StepError, type StepRecord } from "./types.ts";

/** Steps of one run mostly start and finish within the same millisecond: format it once. */
let lastIso = { ms: Number.NaN, text: "" };

function iso(ms: number): string {
  if (ms !== lastIso.ms) lastIso = { ms, text: new Date(ms).toISOString() };
  return lastIso.text;
}

export function pendingRecord(id: string): StepRecord {
  return {
    id,
    status: "pending",
    output: null,
    error: null,
    started_at: null,
    finished_at: null,
    metrics: emptyMetrics(),
    tool_calls: [],
    annotations: null,
    steps: [],
  };
}

/** Whether the JSON of `value` is over `max` UTF-8 bytes (encoding only when it could be). */
function jsonOver(value: Json, max: number): boolean {
  const json = JSON.stringify(value);
  // A UTF-16 code unit is at most 3 UTF-8 bytes: most outputs never need encoding.
  if (json.length * 3 <= max) return false;
  return new TextEncoder().encode(json).length > max;
}

/** A skipped step or item: its output is the skip object, and it is persisted like a finished one. */
export function recordSkip(
  host: RunHost,
  path: string,
  rec: StepRecord,
  finish: (status: StepRecord["status"]) => void,
  reason: string,
  effect = false,
): Json {
  const output = markSkipped(rec, reason);
  finish("skipped");
  host.onStepFinished(path, rec, effect);
  return output;
}

/** Tool arguments and results can hold a secret (one passed to a tool server): masked as recorded. */
function maskToolRecords(host: RunHost, rec: StepRecord): void {
  if (rec.tool_calls.length > 0) {
    rec.tool_calls = host.masker.maskJson(
      rec.tool_calls as unknown as Json,
    ) as unknown as StepRecord["tool_calls"];
  }
  if (rec.annotations !== null) {
    rec.annotations = host.masker.maskJson(
      rec.annotations as unknown as Json,
    ) as unknown as StepRecord["annotations"];
  }
}

/** The output as recorded: masked, and within MAX_OUTPUT_BYTES. */
export function recordable(host: RunHost, output: Json): Json {
  const masked = host.masker.maskJson(output);
  if (jsonOver(masked, MAX_OUTPUT_BYTES)) {
    throw new StepError("output_too_large", `the step output is over ${MAX_OUTPUT_BYTES} bytes`);
  }
  return masked;
}

/**
 * Marks a step's (or fan-out item's) record running from now and tells the host; the function it
 * returns settles the record with a status, its duration, and its tool calls masked.
 */
export function startRecord(
  host: RunHost,
  path: string,
  rec: StepRecord,
  /** When a step resumed after an eviction first started (its record was restored in flight). */
  resumedFrom: string | null = null,
): (status: StepRecord["status"]) => void {
  const t0 = host.now();
  const startedAt = resumedFrom ?? iso(t0);
  markRunning(rec, startedAt);
  host.onStepStarted?.(path, rec);
  return (status) => {
    const t1 = host.now();
    // A resumed step (or one whose wait or checkpoint said when it began) counts from its first start.
    const from =
      rec.started_at === startedAt && resumedFrom === null ? t0 : Date.parse(rec.started_at ?? startedAt);
    markFinished(rec, status, iso(t1), t1 - from);
    maskToolRecords(host, rec);
  };
}

/** The start time a record restored in flight keeps when its step resumes (null: it starts now). */
export function resumedStart(rec: StepRecord | undefined): string | null {
  return rec && IN_FLIGHT.has(rec.status) ? rec.started_at : null;
}

/** A step's `output.schema` (transforms check theirs on their result, in the executor). */
export function checkOutputSchema(schema: JsonSchema, output: Json): void {
  const violations = validateJson(schema, output);
  if (violations.length === 0) return;
  throw new StepError(
    "output_schema_mismatch",
    `the step output does not match its output.schema: ${describeViolations(violations)}`,
  );
}

export function toStepError(err: unknown): StepError {
  if (err instanceof StepError) return err;
  if (err instanceof RunAbort)
    return new StepError(err.kind === "timeout" ? "timeout" : "canceled", err.message);
  const message = err instanceof Error ? err.message : String(err);
  return new StepError("internal_error", message);
}

/** The steps (and fan-out items) under way in `records`, with their starts: what a run's write keeps of them. */
export function inFlightStarts(records: ReadonlyMap<string, StepRecord>): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (const [path, rec] of records)
    if (IN_FLIGHT.has(rec.status) && rec.started_at) out.push([path, rec.started_at]);
  return out;
}

/**
 * After an eviction: the steps that were under way at the run's last write are running again
 * since their first start (the scheduler resumes them from it: `resumedStart`), unless a record
 * of theirs was kept.
 */
export function restoreInFlight(
  records: Map<string, StepRecord>,
  started: ReadonlyArray<[string, string]>,
): void {
  for (const [path, at] of started) {
    if (records.has(path)) continue;
    const rec = pendingRecord(path.slice(path.lastIndexOf("/") + 1));
    markRunning(rec, at);
    records.set(path, rec);
  }
}
