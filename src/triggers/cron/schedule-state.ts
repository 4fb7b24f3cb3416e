/**
 * Which `schedule` entries of a workflow are paused (docs/triggers.md, "Schedules on demand"): one
 * small Durable Object per workflow (binding `SCHEDULES`), written when an operator pauses or
 * resumes an entry and read by the cron handler only for a workflow with an entry due at the
 * event's time. An entry is named by its 0-based index and what it was when it was paused (cron and
 * zone): a later deploy that moves entries around does not leave another entry paused by mistake.
 * Paused firings are not made up when the entry is resumed.
 */
import { DurableObject } from "cloudflare:workers";
import type { CompiledSchedule } from "../../bundle.ts";

export interface PausedEntry {
  index: number;
  cron: string;
  timezone: string;
}

const KEY = "paused";

export class ScheduleState extends DurableObject<Env> {
  /** The paused entries (none when nothing was ever paused: no row is read from storage then). */
  paused(): PausedEntry[] {
    return this.ctx.storage.kv.get<PausedEntry[]>(KEY) ?? [];
  }

  /** Pauses or resumes one entry; the paused entries after it (one row written when it changes). */
  setPaused(entry: PausedEntry, paused: boolean): PausedEntry[] {
    const others = this.paused().filter((p) => p.index !== entry.index);
    const next = paused ? [...others, entry].sort((a, b) => a.index - b.index) : others;
    if (next.length === 0) this.ctx.storage.kv.delete(KEY);
    else this.ctx.storage.kv.put(KEY, next);
    return next;
  }
}

/** The workflow's schedule object. */
export function scheduleState(env: Env, workflow: string): DurableObjectStub<ScheduleState> {
  const ns = (env as unknown as { SCHEDULES: DurableObjectNamespace<ScheduleState> }).SCHEDULES;
  return ns.get(ns.idFromName(workflow));
}

/** Whether entry `index` (as compiled now) is among `paused`. */
export function isPaused(paused: PausedEntry[], index: number, entry: CompiledSchedule): boolean {
  return paused.some((p) => p.index === index && p.cron === entry.cron && p.timezone === entry.timezone);
}
