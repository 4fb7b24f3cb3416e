/**
 * The browser end-to-end test (`npm run test:e2e`), kept out of `npm test` so the main suite
 * needs no browser: Node environment, one file at a time, generous hook time for starting
 * `wrangler dev` and Chromium. Needs the system chromium (`apt-get install chromium`).
 */
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    name: "e2e",
    environment: "node",
    include: ["test/e2e/**/*.e2e.test.ts"],
    fileParallelism: false,
    testTimeout: 30_000,
    hookTimeout: 120_000,
  },
});
