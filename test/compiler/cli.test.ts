/**
 * The two CLIs as users run them (`npm run validate`, `npm run build`), as child processes on
 * the Node 22 binary the project ships: exit codes, every mistake named with its position, and
 * that a failed build writes nothing.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../..", import.meta.url));
const node = join(root, "node_modules/.bin/node");
const out = mkdtempSync(join(tmpdir(), "wf-cli-"));
afterAll(() => rmSync(out, { recursive: true, force: true }));

function run(script: string, ...args: string[]) {
  const r = spawnSync(node, [join(root, "scripts", script), ...args], { cwd: root, encoding: "utf8" });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

const MISTAKES = "test/compiler/fixtures/many-mistakes";
const B = `${MISTAKES}/broken.workflow.yaml`;
const C = `${MISTAKES}/child.yaml`;

describe("validate", () => {
  const r = run("validate.ts", MISTAKES);

  it("exits 1 when the workflows have errors", () => {
    expect(r.code).toBe(1);
  });

  it.each([
    ["wrong kind", `${B}:1:7: \`kind\` must be \`workflow\`, got \`workflows\``],
    ["non-semver version", `${B}:3:10: \`version\` must be a semver string`],
    ["a typo in a top-level field", `${B}:4:1: unknown field \`descripton\`; did you mean \`description\`?`],
    [
      "an invalid JSON Schema",
      `${B}:9:22: params.schema: \`properties.email.type\` \`strnig\` is not a JSON Schema type`,
    ],
    [
      "an unknown auth scheme",
      `${B}:14:13: \`invoke.auth.scheme\` must be one of \`raw\`, \`bearer\`, \`hmac\`,`,
    ],
    ["nested params.agent", `${B}:20:7: step \`ask\`: nested \`params.agent\` is the old ktsu format`],
    ["a duplicate step id", `${B}:21:9: duplicate step id \`ask\``],
    ["two step types in one step", `${B}:25:5: step \`both\` has \`transform\` and \`webhook\``],
    ["a dependency cycle", `${B}:27:5: dependency cycle: \`loop-a\` -> \`loop-b\` -> \`loop-a\``],
    ["bad JMESPath", `${B}:33:16: step \`bad-expr\`: invalid JMESPath in \`condition\``],
    ["an undeclared env var", `${B}:37:12: \`env.MISSING\` is not declared in \`env\``],
    [
      "a read of a non-ancestor step",
      `${B}:40:16: step \`early\` reads \`step.late\`, which is not one of its ancestors`,
    ],
    [
      "a typo in a step field",
      `${B}:43:5: step \`late\`: unknown field \`dependson\`; did you mean \`depends_on\`?`,
    ],
    ["env declared in a sub-workflow", `${C}:4:1: \`env\` is for root workflows only`],
    ["env used in a sub-workflow", `${C}:10:25: \`env.CHILD_SECRET\` is not available here`],
  ])("names %s with its position", (_what, line) => {
    expect(r.stderr.split("\n").some((l) => l.startsWith(line))).toBe(true);
  });

  it("reports all of them in one run and summarises the count", () => {
    expect(r.stderr).toContain("invalid: 15 errors, 0 warnings");
  });

  it("accepts the seed's annotated example with exit 0", () => {
    const ok = run("validate.ts", "test/compiler/fixtures/seed-example");
    expect(ok.stderr).toBe("");
    expect(ok.code).toBe(0);
    expect(ok.stdout).toMatch(/^valid: 2 workflows, 5 steps, 1 agents \(0 errors, 0 warnings\)/);
  });
});

describe("build", () => {
  it("writes the bundle and prints a one-line summary", () => {
    const file = join(out, "ok.json");
    const r = run("build.ts", "test/compiler/fixtures/seed-example", "--out", file);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`^built 2 workflows, 5 steps, 1 agents in \\d+ ms -> ${file}\\n$`));
    expect(JSON.parse(readFileSync(file, "utf8")).invocable).toEqual({
      "support-triage": "support-triage.workflow.yaml",
    });
  });

  it("exits 1 and writes nothing when there is any error", () => {
    const file = join(out, "broken.json");
    const r = run("build.ts", MISTAKES, "--out", file);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("build failed: 15 errors; nothing written");
    expect(existsSync(file)).toBe(false);
  });
});
