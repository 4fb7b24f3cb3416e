/**
 * Writes a generated source only when its text changed, and then whole at once (a temporary file
 * renamed over it): the bench, the e2e tests and the build all write src/generated/, and a test
 * run beside one of them must never read a file half written (docs/operations.md, "Development").
 */
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";

export function writeIfChanged(path: string, text: string): void {
  if (existsSync(path) && readFileSync(path, "utf8") === text) return;
  mkdirSync(dirname(path), { recursive: true });
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, text);
  renameSync(tmp, path);
}
