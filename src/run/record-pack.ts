/**
 * A step record as the `run` row carries it (run-store.ts): the fields every record has at their
 * usual values (no error, no tool calls, no annotations, no children, zero metrics, its id the
 * last part of its path) are left out when written and put back when read, so that a finished
 * 10-step run keeps about a third less (docs/operations.md, "What a run costs"). A record written
 * whole (by an earlier release, or in its own row) reads the same.
 */
import { emptyMetrics, type StepMetrics, type StepRecord } from "../engine/types.ts";

/** A record with its usual values left out. */
export type PackedRecord = Partial<StepRecord> & Pick<StepRecord, "status">;

const lastPart = (path: string) => path.slice(path.lastIndexOf("/") + 1);

export function packRecord(path: string, rec: StepRecord): PackedRecord {
  const { id, error, tool_calls, annotations, steps, metrics, reused_from, variant, ...rest } = rec;
  const out: PackedRecord = { ...rest };
  if (id !== lastPart(path)) out.id = id;
  if (error !== null) out.error = error;
  if (tool_calls.length > 0) out.tool_calls = tool_calls;
  if (annotations !== null) out.annotations = annotations;
  if (steps.length > 0) out.steps = steps;
  if (reused_from !== undefined && reused_from !== null) out.reused_from = reused_from;
  if (variant !== undefined && variant !== null) out.variant = variant;
  const m: Partial<StepMetrics> = {};
  for (const [k, v] of Object.entries(metrics) as Array<[keyof StepMetrics, number]>) if (v !== 0) m[k] = v;
  if (Object.keys(m).length > 0) out.metrics = m as StepMetrics;
  return out;
}

export function unpackRecord(path: string, packed: PackedRecord): StepRecord {
  const metrics = { ...emptyMetrics(), ...packed.metrics };
  return {
    ...packed,
    id: packed.id ?? lastPart(path),
    output: packed.output ?? null,
    error: packed.error ?? null,
    started_at: packed.started_at ?? null,
    finished_at: packed.finished_at ?? null,
    metrics,
    tool_calls: packed.tool_calls ?? [],
    annotations: packed.annotations ?? null,
    steps: packed.steps ?? [],
  } as StepRecord;
}
