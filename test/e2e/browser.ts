/**
 * Headless Chromium for the browser test: the system's Debian `chromium` driven by
 * playwright-core (no browser download), in a fresh profile directory that is removed after, with
 * every background network feature off so the browser talks to nothing but 127.0.0.1.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type BrowserContext, chromium, type Page } from "playwright-core";

export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

export interface Browser {
  context: BrowserContext;
  close(): Promise<void>;
}

export async function launchBrowser(): Promise<Browser> {
  const profile = mkdtempSync(join(tmpdir(), "workflow-edge-chromium-"));
  // A persistent context is how playwright takes a user-data-dir of our choosing.
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
  return {
    context,
    close: async () => {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/**
 * The pages one test opens on the Worker: each records Content-Security-Policy violations and
 * uncaught page errors. `closeAll` (in `afterEach`) closes them and gives those problems back, so
 * that a test whose page broke fails even if its assertions passed.
 */
export class PageTracker {
  private problems: string[] = [];
  private readonly pages: Page[] = [];
  private readonly browser: () => Browser;
  private readonly baseUrl: () => string;
  constructor(browser: () => Browser, baseUrl: () => string) {
    this.browser = browser;
    this.baseUrl = baseUrl;
  }

  async open(path: string): Promise<Page> {
    const page = await this.browser().context.newPage();
    this.pages.push(page);
    page.on("console", (m) => {
      if (/content security policy/i.test(m.text())) this.problems.push(m.text());
    });
    page.on("pageerror", (err) => this.problems.push(`page error: ${err.message}`));
    await page.goto(`${this.baseUrl()}${path}`);
    return page;
  }

  async closeAll(): Promise<string[]> {
    for (const p of this.pages.splice(0)) await p.close();
    const problems = this.problems;
    this.problems = [];
    return problems;
  }
}
