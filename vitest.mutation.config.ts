/**
 * The tests `npm run test:mutation` runs against each mutant (stryker.config.json): the Node
 * tests of the security-critical pure modules it mutates, nothing that needs workerd.
 */
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    name: "mutation",
    environment: "node",
    include: [
      "test/engine/mask.test.ts",
      "test/engine/stream-mask.test.ts",
      "test/engine/net.test.ts",
      "test/engine/budget.test.ts",
      "test/engine/retry.test.ts",
      "test/engine/retry-schedule.test.ts",
      "test/engine/network-failure.test.ts",
      "test/compiler/expression-reads.test.ts",
      "test/compiler/caller-host.test.ts",
      "test/compiler/secret-to-caller-host.test.ts",
      "test/triggers/webhook/signature-schemes.test.ts",
      "test/triggers/webhook/signature-details.test.ts",
      "test/props/outbound-url.test.ts",
      "test/props/masking.test.ts",
    ],
  },
});
