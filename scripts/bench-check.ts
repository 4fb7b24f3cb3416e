/**
 * `npm run bench:check`: every phase of `npm run bench` and `npm run bench:fanout` once, with
 * `--quick` (a few runs each), results written to a temporary directory and no figure held to a
 * target: it proves the documented bench commands still run after a change (CI runs it), and
 * leaves the committed results as they are. Exits non-zero when a phase fails.
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
for (const script of [join(ROOT, "scripts/bench.ts"), join(ROOT, "bench/fanout.ts")]) {
  const r = spawnSync(process.execPath, [script, "--quick"], { stdio: ["ignore", "ignore", "inherit"], env });
  process.stderr.write(
    `${script.slice(ROOT.length)}: ${r.status === 0 ? "ran" : `FAILED (exit ${r.status})`}\n`,
  );
  if (r.status !== 0) failed++;
}
rmSync(dir, { recursive: true, force: true });
process.stderr.write(
  `bench check: ${failed === 0 ? "every phase ran" : `${failed} failed`} (${((performance.now() - started) / 1000).toFixed(0)} s)\n`,
);
process.exit(failed === 0 ? 0 : 1);
