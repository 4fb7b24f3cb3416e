/**
 * `npm run upgrade:snapshot [-- --from DIR]`: keeps the outgoing release's Worker for the upgrade
 * test (docs/operations.md, "Upgrades"). Run it on the release about to be replaced (this checkout,
 * or `--from` a checkout of it) before its successor changes what is stored: it builds that
 * release with test/upgrade/workflows into test/upgrade/previous/ (`worker.js` and
 * `release.json`: its commit and Durable Object classes), which test/e2e/upgrade.e2e.test.ts
 * serves, writes runs with, and hands over to the code of this checkout.
 */
import { execFileSync } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { buildRelease } from "./release-build.ts";

const ROOT = new URL("..", import.meta.url).pathname;
const { values } = parseArgs({ options: { from: { type: "string" } } });
const from = resolve(values.from ?? ROOT);
const tmp = mkdtempSync(join(tmpdir(), "upgrade-snapshot-"));
try {
  const built = await buildRelease(from, join(ROOT, "test/upgrade/workflows"), tmp);
  const out = join(ROOT, "test/upgrade/previous");
  mkdirSync(out, { recursive: true });
  copyFileSync(built.scriptPath, join(out, "worker.js"));
  const commit = execFileSync("git", ["rev-parse", "HEAD"], { cwd: from, encoding: "utf8" }).trim();
  writeFileSync(
    join(out, "release.json"),
    `${JSON.stringify({ commit, built_at: new Date().toISOString(), durable_objects: built.durableObjects }, null, 2)}\n`,
  );
  console.log(`test/upgrade/previous/: the Worker of ${commit.slice(0, 12)} (${from})`);
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
