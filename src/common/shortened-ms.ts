/**
 * A delay that a Worker var may shorten, never lengthen: the var's value in ms when it is a
 * positive number, at most `fallback`; `fallback` otherwise. The tests shorten the listing's
 * flush window and the trace export's retries this way (docs/operations.md).
 */
export function shortenedMs(env: object, name: string, fallback: number): number {
  const ms = Number((env as Record<string, unknown>)[name]);
  return Number.isFinite(ms) && ms > 0 ? Math.min(ms, fallback) : fallback;
}
