/**
 * What a run owes after its answer (its listing entry, its log line, its spans) waits a moment,
 * so that the answer leaves first: in the run's object (run-plan.ts, run-effects.ts) and in the
 * Worker that carries an express run's listing entry (start-run.ts).
 */

/** How long after-answer effects wait, so the answer leaves first. */
export const AFTER_ANSWER_MS = 15;

/** The wait in use: AFTER_ANSWER_MS, or the `AFTER_ANSWER_MS` var (0..100; the workerd tests set 0, docs/decisions.md). */
export function afterAnswerMs(env: object): number {
  const ms = Number((env as { AFTER_ANSWER_MS?: string }).AFTER_ANSWER_MS);
  return Number.isFinite(ms) && ms >= 0 && ms <= 100 ? ms : AFTER_ANSWER_MS;
}
