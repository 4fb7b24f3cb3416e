/**
 * `npm run bench:check`: every documented bench command once, small: every phase of `npm run
 * bench` and `npm run bench:fanout` with `--quick`, and `bench:bursts`, `bench:paths`,
 * `bench:traces`, `bench:ablate` and `bench:protocols` with a few samples each (their own variables or `--quick`), results
 * written to a temporary directory and no figure held to a target: it proves the documented bench
 * commands still run after a change (CI runs it), and leaves the committed results as they are.
 * Exits non-zero when one fails.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ROOT } from "../bench/dev-server.ts";

const dir = mkdtempSync(join(tmpdir(), "bench-check-"));
const env = { ...process.env, BENCH_RESULTS_DIR: dir };
const started = performance.now();
let failed = 0;
/** Each command's script, its arguments, and the variables that make it small. */
const COMMANDS: Array<[string, string[], Record<string, string>]> = [
  ["scripts/bench.ts", ["--quick"], {}],
  ["bench/fanout.ts", ["--quick"], {}],
  ["bench/bursts.ts", [], { BENCH_SAMPLES: "10", BENCH_BURST: "200" }],
  ["bench/paths.ts", [], { BENCH_SAMPLES: "10" }],
  ["bench/traces.ts", [], { BENCH_SAMPLES: "10", BENCH_CPU_ROUNDS: "1" }],
  ["bench/ablate.ts", ["--quick"], {}],
  ["bench/protocols.ts", ["--quick"], { BENCH_SAMPLES: "10" }],
  ["bench/scores.ts", ["--quick"], { BENCH_SAMPLES: "10" }],
];
for (const [script, args, small] of COMMANDS) {
  const began = performance.now();
  const r = spawnSync(process.execPath, [join(ROOT, script), ...args], {
    stdio: ["ignore", "ignore", "inherit"],
    env: { ...env, ...small },
  });
  const took = ((performance.now() - began) / 1000).toFixed(0);
  process.stderr.write(`${script}: ${r.status === 0 ? "ran" : `FAILED (exit ${r.status})`} (${took} s)\n`);
  if (r.status !== 0) failed++;
}
rmSync(dir, { recursive: true, force: true });
process.stderr.write(
  `bench check: ${failed === 0 ? "every phase ran" : `${failed} failed`} (${((performance.now() - started) / 1000).toFixed(0)} s)\n`,
);
process.exit(failed === 0 ? 0 : 1);
