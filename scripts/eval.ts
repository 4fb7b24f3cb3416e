/**
 * `npm run eval [-- FILE|DIR…] [--live] [--min SCORER=MEAN]… [--json OUT]` and `workflow-edge eval`
 * (docs/workflow-tests.md, "Evals"): runs the cases of the test files (default every test file of
 * workflows/) and scores them with their steps' scorers (src/testing/eval.ts); prints one line per
 * case, step, scorer and arm, then each scorer's mean over every case; exits 1 when a `--min` is not
 * met (or a file does not compile), 2 on a usage error.
 */
import { writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { evalMeans, runEvals } from "../src/testing/eval.ts";

const root = fileURLToPath(new URL("..", import.meta.url));
const cwd = (process.env.npm_lifecycle_event === "eval" && process.env.INIT_CWD) || process.cwd();

function usage(message: string): never {
  process.stderr.write(
    `error: usage: ${message}\n(npm run eval -- [FILE|DIR…] [--live] [--min SCORER=MEAN]… [--json OUT])\n`,
  );
  process.exit(2);
}

let parsed: ReturnType<typeof parseArgs>;
try {
  parsed = parseArgs({
    allowPositionals: true,
    options: {
      live: { type: "boolean" },
      min: { type: "string", multiple: true },
      json: { type: "string" },
      workflows: { type: "string" },
    },
  });
} catch (e) {
  usage(e instanceof Error ? e.message : String(e));
}
const { values, positionals } = parsed;
const minimums: Record<string, number> = {};
for (const m of (values.min as string[] | undefined) ?? []) {
  const match = /^([A-Za-z0-9_]+)=(0(\.\d+)?|1(\.0+)?)$/.exec(m);
  if (!match) usage(`--min takes SCORER=MEAN with a mean from 0 to 1, not "${m}"`);
  minimums[match[1] as string] = Number(match[2]);
}
const dir = resolve(cwd, (values.workflows as string | undefined) ?? resolve(root, "workflows"));
const only = positionals.map((p) => resolve(cwd, p));
const { rows, problems } = await runEvals(dir, only, { live: values.live === true, env: process.env });
for (const p of problems) process.stderr.write(`${p}\n`);

const pad = (cells: string[][]) => {
  const widths = cells[0]?.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? "").length))) ?? [];
  return cells
    .map((r) =>
      r
        .map((c, i) => c.padEnd(widths[i] ?? 0))
        .join("  ")
        .trimEnd(),
    )
    .join("\n");
};
const shown = (v: number | null) => (v === null ? "" : v.toFixed(2));
if (rows.length > 0) {
  process.stdout.write(
    `${pad([
      ["CASE", "STEP", "SCORER", "ARM", "SCORE"],
      ...rows.map((r) => [
        r.case,
        r.step,
        r.scorer,
        r.arm ?? "-",
        r.value === null ? (r.error ?? "") : shown(r.value),
      ]),
    ])}\n\n`,
  );
}
const means = evalMeans(rows, minimums);
process.stdout.write(
  `${pad([
    ["SCORER", "MEAN", "CASES", "MIN", ""],
    ...means.map((m) => [
      m.scorer,
      shown(m.mean),
      String(m.count),
      m.min === null ? "-" : shown(m.min),
      m.met ? "" : "below the minimum",
    ]),
  ])}\n`,
);
if (values.json)
  writeFileSync(resolve(cwd, values.json as string), `${JSON.stringify({ rows, means }, null, 2)}\n`);
process.exit(problems.length > 0 || means.some((m) => !m.met) ? 1 : 0);
