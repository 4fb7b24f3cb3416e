/**
 * `npm run test:workflows [FILE|DIR…]`: runs the `*.test.yaml` cases of workflows/ (or only the
 * files and directories given) offline, with mocks, on a virtual clock. Exits 1 when a case
 * fails or a file does not compile.
 *
 *   node scripts/test-workflows.ts [--workflows DIR] [FILE|DIR…]
 *
 * A path outside workflows/ belongs to the nearest directory above it that holds a
 * `*.workflow.yaml` or a `gateway.yaml` (another project), unless `--workflows` says which.
 */
import { existsSync, readdirSync, statSync } from "node:fs";
import { dirname, isAbsolute, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { runWorkflowTests, type Summary } from "../src/testing/runner.ts";

const root = fileURLToPath(new URL("..", import.meta.url));
const args = process.argv.slice(2);
const flag = args.indexOf("--workflows");
const explicit = flag >= 0 ? args[flag + 1] : undefined;
// `npm run` starts scripts in the package root; paths are relative to where the user typed them.
const cwd = (process.env.npm_lifecycle_event === "test:workflows" && process.env.INIT_CWD) || process.cwd();
const paths = args.filter((_, i) => flag < 0 || (i !== flag && i !== flag + 1)).map((p) => resolve(cwd, p));
const defaultDir = explicit !== undefined ? resolve(cwd, explicit) : resolve(root, "workflows");

function inside(path: string, dir: string): boolean {
  const rel = relative(dir, path);
  return rel === "" || (!rel.startsWith("..") && !isAbsolute(rel));
}

function isProjectDir(dir: string): boolean {
  return (
    existsSync(resolve(dir, "gateway.yaml")) || readdirSync(dir).some((f) => f.endsWith(".workflow.yaml"))
  );
}

/** The workflows directory a test path belongs to, or null. */
function projectOf(path: string): string | null {
  if (explicit !== undefined || inside(path, defaultDir)) return defaultDir;
  let dir = existsSync(path) && statSync(path).isDirectory() ? path : dirname(path);
  for (;;) {
    if (existsSync(dir) && isProjectDir(dir)) return dir;
    const up = dirname(dir);
    if (up === dir) return null;
    dir = up;
  }
}

const started = performance.now();
const groups = new Map<string, string[]>();
let problems = 0;
if (paths.length === 0) groups.set(defaultDir, []);
for (const p of paths) {
  const dir = existsSync(p) ? projectOf(p) : null;
  if (dir === null) {
    console.error(
      `${relative(cwd, p) || p}: ${existsSync(p) ? "no workflows directory above it; pass --workflows DIR" : "not found"}`,
    );
    problems++;
    continue;
  }
  groups.set(dir, [...(groups.get(dir) ?? []), p]);
}

const total: Summary = { files: 0, cases: 0, passed: 0, failed: 0, errors: problems };
for (const [dir, only] of groups) {
  const s = await runWorkflowTests(dir, { only, write: (line) => console.log(line) });
  total.files += s.files;
  total.cases += s.cases;
  total.passed += s.passed;
  total.failed += s.failed;
  total.errors += s.errors;
}

const seconds = ((performance.now() - started) / 1000).toFixed(2);
const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;
if (total.errors > 0) {
  console.log(
    `${plural(total.errors, "error")}; ${total.cases === 0 ? "no case ran" : "not every case ran"} (${seconds} s)`,
  );
  process.exit(1);
}
if (total.files === 0) {
  console.log(`no *.test.yaml file in ${[...groups.keys()].map((d) => relative(cwd, d) || ".").join(", ")}`);
} else {
  console.log(
    `${plural(total.cases, "case")} in ${plural(total.files, "file")}: ${total.passed} passed, ${total.failed} failed (${seconds} s)`,
  );
}
if (total.failed > 0) process.exit(1);
