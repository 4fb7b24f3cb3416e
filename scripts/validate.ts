/**
 * `npm run validate`: the build's checks without writing anything. Prints every error and
 * warning (`file:line:col: message`) and exits 1 when there is any error; for editors, CI and
 * pre-commit hooks.
 *
 *   npx node scripts/validate.ts [workflows-dir]
 */
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { compileProject } from "../src/compiler/index.ts";

const root = fileURLToPath(new URL("..", import.meta.url));
const dir = process.argv[2] ?? resolve(root, "workflows");

const result = compileProject(dir);
for (const d of result.diagnostics) console.error(d.text);
const errors = result.diagnostics.filter((d) => d.severity === "error").length;
const warnings = result.diagnostics.length - errors;
const summary = `${errors} error${errors === 1 ? "" : "s"}, ${warnings} warning${warnings === 1 ? "" : "s"}`;
if (errors > 0) {
  console.error(`invalid: ${summary}`);
  process.exit(1);
}
const cases = result.tests.reduce((n, t) => n + t.cases.length, 0);
const tests = result.tests.length > 0 ? `, ${result.tests.length} test files (${cases} cases)` : "";
console.log(
  `valid: ${result.stats.workflows} workflows, ${result.stats.steps} steps, ${result.stats.agents} agents${tests} (${summary})`,
);
