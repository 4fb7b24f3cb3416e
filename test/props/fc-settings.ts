/**
 * How many cases each property test runs, and from which seed (docs/operations.md, "Property
 * tests"): `npm test` runs 200 from a fixed seed, so a failure replays; `npm run test:props --
 * --runs N [--seed S]` searches longer (scripts/test-props.ts sets these variables).
 */
export function fcSettings(): { numRuns: number; seed: number } {
  const env = typeof process === "undefined" ? {} : process.env;
  const runs = Number(env.PROPS_RUNS);
  const seed = Number(env.PROPS_SEED);
  return {
    numRuns: Number.isInteger(runs) && runs > 0 ? runs : 200,
    seed: Number.isInteger(seed) ? seed : 20261129,
  };
}
