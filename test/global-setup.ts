/**
 * Runs in Node before the workers project: compiles test/fixtures/workflows into the bundle the
 * Worker under test imports (alias `workflow-bundle`), and starts the real HTTP servers the
 * tests talk to on 127.0.0.1 (webhook targets, model provider stubs, the senders' signer). Ports and the secret
 * values the fixtures use reach workerd as bindings (vitest.config.ts).
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { TestProject } from "vitest/node";
import { compileProject } from "../src/compiler/index.ts";
import { TEST_SECRETS } from "./fixtures/secrets.ts";
import { startMcpTools } from "./servers/mcp-tools.ts";
import { startModelStub } from "./servers/model-stub.ts";
import { startServerEverything } from "./servers/server-everything.ts";
import { startSigner } from "./servers/signer.ts";
import { startWebhookTarget } from "./servers/webhook-target.ts";

declare module "vitest" {
  export interface ProvidedContext {
    targetPort: number;
    modelPort: number;
    testSecrets: Record<string, string>;
    /** server-everything's Streamable HTTP endpoint. */
    mcpEverythingUrl: string;
    /** Our logging MCP server (test/servers/mcp-tools.ts), both transports. */
    mcpToolsUrl: string;
    signerPort: number;
    discordPublicKey: string;
  }
}

export default async function setup(project: TestProject) {
  const dir = fileURLToPath(new URL("./fixtures/workflows", import.meta.url));
  const result = compileProject(dir);
  const errors = result.diagnostics.filter((d) => d.severity === "error");
  if (!result.bundle || errors.length > 0) {
    throw new Error(`test fixtures do not compile:\n${errors.map((d) => d.text).join("\n")}`);
  }
  const out = fileURLToPath(new URL("./generated/", import.meta.url));
  mkdirSync(out, { recursive: true });
  writeFileSync(`${out}bundle.json`, JSON.stringify(result.bundle));

  const target = await startWebhookTarget();
  const model = await startModelStub();
  const signer = await startSigner();
  const everything = await startServerEverything();
  const tools = await startMcpTools();
  project.provide("targetPort", target.port);
  project.provide("modelPort", model.port);
  project.provide("testSecrets", TEST_SECRETS);
  project.provide("signerPort", signer.port);
  project.provide("discordPublicKey", signer.discordPublicKey);
  project.provide("mcpEverythingUrl", everything.url);
  project.provide("mcpToolsUrl", `http://127.0.0.1:${tools.port}`);
  return async () => {
    await target.close();
    await model.close();
    await signer.close();
    await everything.close();
    await tools.close();
  };
}
