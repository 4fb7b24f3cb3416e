/**
 * How many cases each property test runs, and from which seed (docs/operations.md, "Property
 * tests"): `npm test` runs 200 from a fixed seed, so a failure replays; `npm run test:props --
 * --runs N [--seed S]` searches longer (scripts/test-props.ts sets PROPS_RUNS and PROPS_SEED, which
 * vitest.config.ts hands to workerd as bindings: a workerd test passes its `env`).
 */
export function fcSettings(vars?: object): { numRuns: number; seed: number } {
  const source = (vars ?? (typeof process === "undefined" ? {} : process.env)) as Record<string, unknown>;
  const runs = Number(source.PROPS_RUNS);
  const seed = Number(source.PROPS_SEED);
  return {
    numRuns: Number.isInteger(runs) && runs > 0 ? runs : 200,
    seed: Number.isInteger(seed) ? seed : 20261129,
  };
}

/** A property test's time limit: `perCaseMs` for each of its cases, at least a minute. */
export function propTimeoutMs(perCaseMs: number, vars?: object): number {
  return Math.max(60_000, fcSettings(vars).numRuns * perCaseMs);
}
