/**
 * `npm run build`: compiles workflows/ (or the directory given as the first argument) into the
 * JSON bundle the Worker imports, and the OpenAPI document of the invocable workflows beside it
 * (`openapi.json`, the same document the Worker serves at GET /openapi.json), and the viewer's
 * browser scripts (src/viewer/browser/, bundled into src/generated/viewer-scripts.ts). Prints
 * every diagnostic and a one-line summary; on any error it
 * exits 1 and writes nothing, so a broken edit never replaces a working bundle. Under `npm start`
 * (WORKFLOW_EDGE_DEV=1) it keeps the last good bundle with the errors noted in it and exits 0, so
 * the dev server answers 503 `build_failed` instead of waiting.
 *
 *   npx node scripts/build.ts [workflows-dir] [--out path/to/bundle.json]
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { compileProject } from "../src/compiler/index.ts";
import { buildOpenApi } from "../src/openapi/build.ts";
import { writeGeneratedSources } from "./generated-sources.ts";

const root = fileURLToPath(new URL("..", import.meta.url));
const args = process.argv.slice(2);
const outFlag = args.indexOf("--out");
const outArg = outFlag >= 0 ? args[outFlag + 1] : undefined;
const positional = args.filter((_, i) => i !== outFlag && i !== outFlag + 1);
const dir = positional[0] ?? resolve(root, "workflows");
const out = outArg ? resolve(outArg) : resolve(root, "src/generated/bundle.json");

const result = compileProject(dir);
for (const d of result.diagnostics) console.error(d.text);
if (!result.bundle) {
  const errors = result.diagnostics.filter((d) => d.severity === "error");
  const count = `${errors.length} error${errors.length === 1 ? "" : "s"}`;
  // Under `npm start` (WORKFLOW_EDGE_DEV=1) a failed build keeps the last good bundle and notes the
  // errors in it: the dev server answers every request 503 build_failed naming them, at once,
  // instead of holding requests until the file is fixed. Anywhere else nothing is written.
  if (process.env.WORKFLOW_EDGE_DEV === "1" && existsSync(out)) {
    const last = JSON.parse(readFileSync(out, "utf8")) as Record<string, unknown>;
    writeFileSync(out, `${JSON.stringify({ ...last, buildErrors: errors.map((d) => d.text) }, null, 2)}\n`);
    console.error(`build failed: ${count}; the dev server answers 503 build_failed until they are fixed`);
    process.exit(0);
  }
  console.error(`build failed: ${count}; nothing written`);
  process.exit(1);
}
mkdirSync(dirname(out), { recursive: true });
writeFileSync(out, `${JSON.stringify({ ...result.bundle, builtAt: new Date().toISOString() }, null, 2)}\n`);
writeFileSync(
  resolve(dirname(out), "openapi.json"),
  `${JSON.stringify(buildOpenApi(result.bundle), null, 2)}\n`,
);
await writeGeneratedSources(resolve(root, "src/generated"));
const { workflows, steps, agents, ms } = result.stats;
const rel = relative(process.cwd(), out);
const shown = rel === "" || rel.startsWith("..") ? out : rel;
console.log(`built ${workflows} workflows, ${steps} steps, ${agents} agents in ${ms} ms -> ${shown}`);
