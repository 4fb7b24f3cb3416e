/**
 * What the Worker imports from src/generated/ besides the workflow bundle, written at build time
 * (and by every tool that bundles the Worker without `npm run build`: the bench, the e2e tests,
 * the upgrade and chaos runs): the viewer's browser scripts (viewer-scripts.ts) and the email
 * trigger's MIME parser (postal-mime.ts).
 */
import { join } from "node:path";
import { bundlePostalMime } from "./postal-mime.ts";
import { bundleViewerScripts } from "./viewer-scripts.ts";

export async function writeGeneratedSources(generated: string): Promise<void> {
  await bundleViewerScripts(join(generated, "viewer-scripts.ts"));
  await bundlePostalMime(generated);
}
