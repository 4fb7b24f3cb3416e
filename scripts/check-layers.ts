/**
 * `npm run lint:layers`: the layer rules of .dependency-cruiser.cjs (docs/architecture.md) over
 * src/, cli/, scripts/ and bench/ of the current folder, and proof that dependency-cruiser read every
 * module: the modules it cruised must be exactly the .ts files under those folders (src/generated and
 * bench/tmp aside), or a
 * file it skipped would escape the rules unseen. Prints each violation as `rule: from → to`, then
 * `layers: N modules checked, V violations`; exits 1 on any violation or any module not cruised.
 *
 * dependency-cruiser warns `missing-tsc-transpiler` because TypeScript 7 has no JS API yet; the
 * config parses with swc instead, which reads type-only imports too, so that one warning is not
 * shown. Any other environment issue is printed.
 */
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const SKIPPED_WARNING = "missing-tsc-transpiler";
/** The folders whose modules the rules cover (a tree without scripts/ or bench/ is checked without them). */
const FOLDERS = ["src", "cli", "scripts", "bench"].filter((f) => existsSync(f));

interface CruiseResult {
  modules: Array<{ source: string }>;
  summary: {
    violations: Array<{ from: string; to: string; rule: { name: string; severity: string } }>;
    environment?: { issues?: Array<{ name: string; severity: string; description: string }> };
  };
}

const r = spawnSync(
  process.execPath,
  [
    join(root, "node_modules/dependency-cruiser/bin/dependency-cruiser.mjs"),
    ...FOLDERS,
    "--config",
    join(root, ".dependency-cruiser.cjs"),
    "--output-type",
    "json",
  ],
  { encoding: "utf8", maxBuffer: 64 * 1024 * 1024 },
);
let result: CruiseResult;
try {
  result = JSON.parse(r.stdout) as CruiseResult;
} catch {
  process.stderr.write(`layers: dependency-cruiser did not finish (exit ${r.status})\n${r.stderr}`);
  process.exit(1);
}

for (const issue of result.summary.environment?.issues ?? []) {
  if (issue.name !== SKIPPED_WARNING) console.error(`${issue.severity} ${issue.name}: ${issue.description}`);
}

/** The project's modules: every .ts file under `dir`, generated code and the bench's scratch aside. */
function sources(dir: string): string[] {
  const entries = readdirSync(dir, { recursive: true, encoding: "utf8" });
  return entries
    .map((entry) => join(dir, entry))
    .filter((path) => path.endsWith(".ts") && !/^(src\/generated|bench\/tmp)\//.test(path));
}

const expected = FOLDERS.flatMap(sources).sort();
const cruised = new Set(result.modules.map((m) => m.source));
const missed = expected.filter((f) => !cruised.has(f));
const checked = expected.length - missed.length;
for (const f of missed) console.error(`not cruised: ${f} (the layer rules never saw it)`);

const violations = result.summary.violations;
for (const v of violations) console.error(`${v.rule.severity} ${v.rule.name}: ${v.from} → ${v.to}`);
const line = `layers: ${checked} modules checked, ${violations.length} violation${violations.length === 1 ? "" : "s"}`;
if (violations.length > 0 || missed.length > 0) {
  console.error(
    missed.length > 0 ? `${line}, ${missed.length} of ${expected.length} modules not cruised` : line,
  );
  process.exit(1);
}
console.log(line);
