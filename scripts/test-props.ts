/**
 * `npm run test:props [-- --runs N] [--seed S]`: the property tests (test/props/, fast-check) alone,
 * searching longer than `npm test` does (200 cases each from a fixed seed): N cases each, from seed
 * S (default: a new one, printed first, so a failure replays with `--seed`). docs/operations.md,
 * "Property tests". A counterexample fast-check shrinks is printed with its seed and path; keep it
 * as a named regression test beside the property.
 */
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { parseArgs } from "node:util";

const ROOT = new URL("..", import.meta.url).pathname;
const { values } = parseArgs({ options: { runs: { type: "string" }, seed: { type: "string" } } });
const runs = Number(values.runs ?? 1000);
const seed = values.seed === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(values.seed);
if (!Number.isInteger(runs) || runs < 1 || !Number.isInteger(seed)) {
  console.error("usage: npm run test:props [-- --runs N] [--seed S]");
  process.exit(2);
}
console.log(
  `property tests: ${runs} cases each, seed ${seed} (npm run test:props -- --runs ${runs} --seed ${seed})`,
);
const build = spawnSync("npm", ["run", "build", "--silent"], { cwd: ROOT, stdio: "inherit" });
if (build.status !== 0) process.exit(build.status ?? 1);
const r = spawnSync(process.execPath, [join(ROOT, "node_modules/vitest/vitest.mjs"), "run", "test/props"], {
  cwd: ROOT,
  stdio: "inherit",
  env: { ...process.env, PROPS_RUNS: String(runs), PROPS_SEED: String(seed) },
});
process.exit(r.status ?? 1);
