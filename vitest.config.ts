/**
 * Two projects: `node` runs the compiler and the pure engine in Node; `workers` runs the Worker,
 * its Durable Objects and the step executors in workerd (real storage, real alarms), against
 * real HTTP servers on 127.0.0.1 started by test/global-setup.ts.
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { cloudflareTest } from "@cloudflare/vitest-plugin";
import { parse } from "smol-toml";
import type { Plugin } from "vite";
import { defineConfig } from "vitest/config";

const testBundle = fileURLToPath(new URL("./test/generated/bundle.json", import.meta.url));

interface FixtureToml {
  ratelimits?: Array<{ name: string; namespace_id: string; simple: { limit: number; period?: 10 | 60 } }>;
  queues?: {
    consumers?: Array<{
      queue: string;
      max_batch_size?: number;
      max_batch_timeout?: number;
      max_retries?: number;
      dead_letter_queue?: string;
      retry_delay?: number;
    }>;
  };
}

/** The wrangler.toml the fixtures are compiled against (test/fixtures/wrangler.toml). */
const fixtureToml = parse(
  readFileSync(new URL("./test/fixtures/wrangler.toml", import.meta.url), "utf8"),
) as FixtureToml;

/** The fixtures' rate limit bindings, for Miniflare. */
function fixtureRateLimits() {
  return Object.fromEntries(
    (fixtureToml.ratelimits ?? []).map((r) => [r.name, { namespace_id: r.namespace_id, simple: r.simple }]),
  );
}

/** The fixtures' queue consumers, for Miniflare (our Worker consumes them, as wrangler.toml says). */
function fixtureQueueConsumers() {
  return Object.fromEntries(
    (fixtureToml.queues?.consumers ?? []).map((c) => [
      c.queue,
      {
        maxBatchSize: c.max_batch_size,
        maxBatchTimeout: c.max_batch_timeout,
        maxRetries: c.max_retries,
        deadLetterQueue: c.dead_letter_queue,
        retryDelay: c.retry_delay,
      },
    ]),
  );
}

/**
 * The producer Worker a project runs beside ours locally (dev/queue-producer.js), here for the
 * fixtures' queues: it sends to them and consumes their dead-letter queues; tests reach it
 * through `QUEUE_PRODUCER`.
 */
const queueProducer = {
  name: "queue-producer",
  modules: true,
  scriptPath: "./dev/queue-producer.js",
  compatibilityDate: "2026-10-20",
  queueProducers: Object.fromEntries(
    (fixtureToml.queues?.consumers ?? []).map((c) => [
      c.queue.toUpperCase().replace(/-/g, "_"),
      { queueName: c.queue },
    ]),
  ),
  queueConsumers: Object.fromEntries(
    (fixtureToml.queues?.consumers ?? [])
      .filter((c) => c.dead_letter_queue)
      .map((c) => [c.dead_letter_queue as string, { maxBatchTimeout: 0.1 }]),
  ),
};

/**
 * Vite's messages less one warning: stripe and standardwebhooks ship source maps naming sources
 * they do not ship, and the workers project inlines them, so Vite said so about 200 times a run.
 * It is about those packages' tarballs, not this project's code; every other message passes.
 * (Vitest sets the logger in its own `config` hook, so this wraps it in a later one.)
 */
const quietPackageSourcemaps: Plugin = {
  name: "workflow-edge:quiet-package-sourcemaps",
  config: {
    order: "post",
    handler(config) {
      const logger = config.customLogger;
      if (!logger) return;
      config.customLogger = {
        ...logger,
        warnOnce(msg, options) {
          if (/^Sourcemap for "[^"]*\/node_modules\/[^"]*" points to missing source files$/.test(msg)) return;
          logger.warnOnce(msg, options);
        },
      };
    },
  },
};

export default defineConfig({
  test: {
    // Every finished run logs one JSON line (src/run/object/run-log.ts); the suite starts thousands.
    // A trace.dropped line is what the refusing-collector test asserts on (through its console spy).
    onConsoleLog: (log) => !/^\{"event":"(run\.finished|trace\.dropped)"/.test(log),
    projects: [
      {
        test: {
          name: "node",
          environment: "node",
          include: [
            "test/agents/**/*.test.ts",
            "test/bundle/**/*.test.ts",
            "test/common/**/*.test.ts",
            "test/compiler/**/*.test.ts",
            "test/engine/**/*.test.ts",
            "test/run/**/*.test.ts",
            "test/docs/**/*.test.ts",
            "test/gateway/**/*.test.ts",
            "test/http/**/*.test.ts",
            "test/mcp-client/**/*.test.ts",
            "test/openapi/**/*.test.ts",
            "test/triggers/**/*.test.ts",
            "test/scripts/**/*.test.ts",
            "test/reliability/compiler/**/*.test.ts",
            "test/testing/**/*.test.ts",
            "test/viewer/**/*.test.ts",
            "test/cli/**/*.test.ts",
            "test/props/**/*.test.ts",
          ],
          // A `.workerd.test.ts` file beside them runs in workerd (the other project).
          exclude: ["**/*.workerd.test.ts"],
        },
      },
      {
        plugins: [
          quietPackageSourcemaps,
          cloudflareTest(({ inject }) => ({
            wrangler: { configPath: "./wrangler.toml" },
            miniflare: {
              ratelimits: fixtureRateLimits(),
              queueConsumers: fixtureQueueConsumers(),
              serviceBindings: { QUEUE_PRODUCER: "queue-producer" },
              workers: [queueProducer],
              bindings: {
                ALLOW_PRIVATE_WEBHOOKS: "true",
                TARGET_URL: `http://127.0.0.1:${inject<number>("targetPort")}`,
                // A secret that is a URL with its token in the path (test/reliability/secret-url.test.ts).
                SECRET_HOOK_URL: `http://127.0.0.1:${inject<number>("targetPort")}/api/webhooks/1234/hooktok-5f2e8d1c9b7a?wait=true`,
                MODEL_BASE_URL: `http://127.0.0.1:${inject<number>("modelPort")}`,
                MCP_EVERYTHING_URL: inject<string>("mcpEverythingUrl"),
                MCP_TOOLS_URL: inject<string>("mcpToolsUrl"),
                MCP_SDK_URL: inject<string>("mcpSdkUrl"),
                SIGNER_URL: `http://127.0.0.1:${inject<number>("signerPort")}`,
                DISCORD_PUBLIC_KEY: inject<string>("discordPublicKey"),
                GREETING: "Hello",
                PUBLIC_URL: "https://flows.example.com/some/path",
                // Listing shards write their batches after this long (docs/operations.md; 8 s deployed).
                LISTING_FLUSH_MS: "300",
                // A busy isolate's finished runs ride to their shard together after this long (1 s deployed).
                LISTING_RIDE_MS: "250",
                // After-answer effects at once: what a test checks right after an answer (the log
                // line, the listing) is there without a wait (docs/decisions.md).
                AFTER_ANSWER_MS: "0",
                // Every run exports its spans to the local collector; a failed export is tried
                // again after 100 ms, 200 ms, 400 ms (2 s, 4 s, 8 s deployed).
                OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${inject<number>("collectorPort")}`,
                TRACE_RETRY_MS: "100",
                ...inject<Record<string, string>>("testSecrets"),
                // npm run test:props -- --runs N --seed S (test/props/fc-settings.ts).
                ...(process.env.PROPS_RUNS ? { PROPS_RUNS: process.env.PROPS_RUNS } : {}),
                ...(process.env.PROPS_SEED ? { PROPS_SEED: process.env.PROPS_SEED } : {}),
              },
            },
          })),
        ],
        resolve: { alias: { "workflow-bundle": testBundle } },
        test: {
          name: "workers",
          include: [
            "test/worker/**/*.test.ts",
            "test/steps/**/*.test.ts",
            "test/reliability/*.test.ts",
            "test/**/*.workerd.test.ts",
          ],
          globalSetup: ["./test/global-setup.ts"],
          testTimeout: 30_000,
          // One workerd for all files, not one per file: disposing a file's Miniflare while its
          // objects still had work under way (a run that outlives its test, a shard's flush)
          // hung the suite for ever between files now and then; shared, it never did, and it is
          // faster. Tests already use unique keys and restore their spies.
          isolate: false,
        },
      },
    ],
  },
});
