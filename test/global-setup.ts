/**
 * Runs in Node before the workers project: compiles test/fixtures/workflows into the bundle the
 * Worker under test imports (alias `workflow-bundle`), and starts the real HTTP servers the
 * tests talk to on 127.0.0.1 (webhook targets, model provider stubs, the senders' signer). Ports and the secret
 * values the fixtures use reach workerd as bindings (vitest.config.ts). workerd's messages that
 * the eviction and kill tests cause on purpose are held back (holdBackExpectedWorkerdMessages).
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { TestProject } from "vitest/node";
import { compileProject } from "../src/compiler/index.ts";
import { OTLP_COLLECTOR_TOKEN, TEST_SECRETS } from "./fixtures/secrets.ts";
import { startMcpSdk } from "./servers/mcp-sdk.ts";
import { startMcpTools } from "./servers/mcp-tools.ts";
import { startModelStub } from "./servers/model-stub.ts";
import { startOtlpCollector } from "./servers/otlp-collector.ts";
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
    /** The SDK-built MCP server and its OAuth copy and authorization server (test/servers/mcp-sdk.ts). */
    mcpSdkUrl: string;
    /** The local OTLP collector (test/servers/otlp-collector.ts). */
    collectorPort: number;
    signerPort: number;
    discordPublicKey: string;
  }
}

export default async function setup(project: TestProject) {
  const workerd = holdBackExpectedWorkerdMessages();
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
  const sdk = await startMcpSdk({
    clientSecret: TEST_SECRETS.OAUTH_CLIENT_SECRET as string,
    refreshToken: TEST_SECRETS.OAUTH_REFRESH_TOKEN as string,
    revokedRefreshToken: TEST_SECRETS.OAUTH_REFRESH_REVOKED as string,
  });
  const collector = await startOtlpCollector(OTLP_COLLECTOR_TOKEN);
  project.provide("targetPort", target.port);
  project.provide("modelPort", model.port);
  project.provide("testSecrets", TEST_SECRETS);
  project.provide("signerPort", signer.port);
  project.provide("discordPublicKey", signer.discordPublicKey);
  project.provide("mcpEverythingUrl", everything.url);
  project.provide("mcpToolsUrl", `http://127.0.0.1:${tools.port}`);
  project.provide("mcpSdkUrl", sdk.url);
  project.provide("collectorPort", collector.port);
  return async () => {
    await target.close();
    await model.close();
    await signer.close();
    await everything.close();
    await tools.close();
    await sdk.close();
    await collector.close();
    workerd.stop();
  };
}

/** What workerd says when a test has evicted or killed an object, or dropped a connection. */
const EXPECTED_WORKERD = [
  /disconnected: client error \(SendRequest\)/,
  /Network connection lost\./,
  /disconnected: read end of pipe was aborted/,
  /jsg\.Error: killed\b/,
  // A webhook step or delivery that a test points at a closed port, or whose call it cancels.
  /disconnected: Connection refused \(os error 111\)/,
  /disconnected: HTTP body: error reading a body from connection/,
  /jsg\.Error: flow key killed/,
  /jsg\.Error: shard reset/,
  // A finished run whose last duties answer while its guard alarm runs deletes that alarm from
  // inside it (nothing more is due): workerd notes the alarm as canceled, as the run asked.
  /alarm handler canceled with requestScheduledAlarm/,
  // A run whose version no store keeps is refused (test/run/definitions/definitions.workerd.test.ts).
  /the definition of workflow \S+ in version [0-9a-f]{12} is not kept/,
];

/**
 * workerd's own messages that the workers project's tests cause on purpose. Tests that evict or
 * kill a run's Durable Object mid-request (test/reliability/eviction.test.ts,
 * test/worker/run-notifications.test.ts, the durability and cancel tests) or cut a request off
 * make workerd print what it lost, each with a native stack: about 20 messages a run that look
 * like failures and are not. The vitest plugin writes workerd's output to stdout and stderr itself
 * and takes no handler for it, so this holds back those known messages (anything else passes
 * unchanged) and says at the end how many it held back. SHOW_EXPECTED_WORKERD_LOGS=1 prints them
 * as they come.
 */
function holdBackExpectedWorkerdMessages(): { stop(): void } {
  if (process.env.SHOW_EXPECTED_WORKERD_LOGS) return { stop() {} };
  let held = 0;
  const restore = [process.stdout, process.stderr].map((stream) => {
    const write = stream.write;
    stream.write = function (this: NodeJS.WriteStream, chunk: unknown, ...rest: unknown[]) {
      const text = typeof chunk === "string" ? chunk : "";
      if (EXPECTED_WORKERD.some((re) => re.test(text))) {
        held++;
        (rest.find((r) => typeof r === "function") as (() => void) | undefined)?.();
        return true;
      }
      return (write as (...args: unknown[]) => boolean).call(this, chunk, ...rest);
    } as typeof stream.write;
    return () => {
      stream.write = write;
    };
  });
  return {
    stop() {
      for (const r of restore) r();
      if (held > 0)
        process.stderr.write(
          `workerd: ${held} messages held back, all expected: tests evicted or killed Durable Objects, or cut requests, on purpose (SHOW_EXPECTED_WORKERD_LOGS=1 prints them)\n`,
        );
    },
  };
}
