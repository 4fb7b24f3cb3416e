/**
 * `npm run test:mutation`: Stryker over the security-critical pure modules (stryker.config.json:
 * masking and stream masking, the outbound URL policy, the build's secret-to-caller-host check,
 * signature verification, the budget, the retry schedule), then the mutation score of each module
 * against its floor of 85 % (docs/operations.md, "Mutation testing"). A mutant that survives is
 * either killed by a new test or marked equivalent in the code with why (`// Stryker disable
 * next-line <mutator>: <why>`). Exits 1 when a module is under its floor or Stryker fails.
 */
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const FLOOR = 85;
const root = fileURLToPath(new URL("..", import.meta.url));
const run = spawnSync("npx", ["stryker", "run", ...process.argv.slice(2)], { cwd: root, stdio: "inherit" });
if (run.status !== 0) process.exit(run.status ?? 1);

interface Report {
  files: Record<string, { mutants: Array<{ status: string }> }>;
}
const report = JSON.parse(readFileSync(`${root}reports/mutation/mutation.json`, "utf8")) as Report;
const KILLED = new Set(["Killed", "Timeout"]);
const COUNTED = new Set(["Killed", "Timeout", "Survived", "NoCoverage"]);
let below = 0;
console.log("\nmodule                                   score   killed  survived  no cover  ignored");
for (const [file, { mutants }] of Object.entries(report.files).sort()) {
  const counted = mutants.filter((m) => COUNTED.has(m.status));
  const killed = counted.filter((m) => KILLED.has(m.status)).length;
  const survived = counted.filter((m) => m.status === "Survived").length;
  const noCover = counted.filter((m) => m.status === "NoCoverage").length;
  const ignored = mutants.filter((m) => m.status === "Ignored").length;
  const score = counted.length === 0 ? 100 : (100 * killed) / counted.length;
  if (score < FLOOR) below++;
  console.log(
    `${file.padEnd(40)} ${score.toFixed(1).padStart(5)} %  ${String(killed).padStart(6)}  ${String(survived).padStart(8)}  ${String(noCover).padStart(8)}  ${String(ignored).padStart(7)}${score < FLOOR ? `  under ${FLOOR} %` : ""}`,
  );
}
if (below > 0) {
  console.error(`\n${below} module(s) under the ${FLOOR} % floor`);
  process.exit(1);
}
console.log(`\nevery module at ${FLOOR} % or more`);
