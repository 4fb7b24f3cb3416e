/**
 * The world of the viewer's browser tests: a webhook target on 127.0.0.1, the Worker under
 * `wrangler dev` (test/e2e/workflows) pointed at it, and headless Chromium. `useViewerStack()`
 * registers the hooks that start and stop them and that fail a test whose pages broke (CSP
 * violations, uncaught errors); a file may add its own `beforeAll` after it.
 */
import { afterAll, afterEach, beforeAll, expect } from "vitest";
import { startWebhookTarget } from "../servers/webhook-target.ts";
import { type Browser, launchBrowser, PageTracker } from "./browser.ts";
import { startWorker, type WorkerProcess } from "./worker-process.ts";

export const E2E_SECRET = "e2e-secret-value-7d41c9";
export const E2E_TOKEN = "e2e-token-52be8a0f13";

export interface ViewerStack {
  /** The running Worker (available once the file's tests run). */
  worker(): WorkerProcess;
  pages: PageTracker;
}

export function useViewerStack(): ViewerStack {
  let target: { port: number; close(): Promise<void> } | undefined;
  let worker: WorkerProcess | undefined;
  let browser: Browser | undefined;
  const running = (): WorkerProcess => {
    if (!worker) throw new Error("the Worker is not running");
    return worker;
  };
  const pages = new PageTracker(
    () => {
      if (!browser) throw new Error("the browser is not running");
      return browser;
    },
    () => running().url,
  );

  beforeAll(async () => {
    target = await startWebhookTarget();
    worker = await startWorker({
      ALLOW_PRIVATE_WEBHOOKS: "true",
      TARGET_URL: `http://127.0.0.1:${target.port}`,
      E2E_SECRET,
      E2E_TOKEN,
      // The run page links each run's trace here (docs/operations.md, "Traces").
      TRACE_URL: "https://traces.example.com/trace/{trace_id}?from=viewer",
    });
    browser = await launchBrowser();
  });

  afterAll(async () => {
    await browser?.close();
    await worker?.stop();
    await target?.close();
  });

  afterEach(async () => {
    expect(await pages.closeAll()).toEqual([]);
  });

  return { worker: running, pages };
}
