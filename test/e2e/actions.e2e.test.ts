/**
 * The run viewer's actions, in headless Chromium against `wrangler dev`: a waiting wait step
 * offers a form that sends its signal; Cancel ends an active run; Re-run starts a new run of a
 * finished one and opens it (it links back to the run it re-runs). Each asks for the workflow's
 * credentials like Approve does.
 */
import type { Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import { E2E_TOKEN, useViewerStack } from "./viewer-stack.ts";

const stack = useViewerStack();
const AUTH = { authorization: `Bearer ${E2E_TOKEN}` };

async function startWaiting(): Promise<string> {
  const res = await fetch(`${stack.worker().url}/invoke/e2e-waiting`, {
    method: "POST",
    headers: { "content-type": "application/json", ...AUTH },
    body: "{}",
  });
  expect(res.status).toBe(202);
  return ((await res.json()) as { run_id: string }).run_id;
}

async function openWithToken(runId: string): Promise<Page> {
  const page = await stack.pages.open(`/runs/${runId}/view`);
  await page.locator("#credential-form").waitFor();
  await page.locator("#credential-value").fill(`Bearer ${E2E_TOKEN}`);
  await page.locator('#credential-form button[type="submit"]').click();
  await page.locator('.node[data-step="go-ahead"][data-status="waiting"]').waitFor();
  return page;
}

describe("run viewer actions", () => {
  it("sends a waiting step's signal from its form, and the run completes", async () => {
    const page = await openWithToken(await startWaiting());
    await page.locator('.node[data-step="go-ahead"]').click();
    const form = page.locator("#signal-form");
    await form.waitFor();
    expect(await page.locator("#signal-title").textContent()).toBe("Send go_ahead");
    await page.locator("#signal-body").fill('{"by": "ada"}');
    await page.locator("#signal-send").click();
    await page.locator('#run-status[data-status="complete"]').waitFor();
    await page.locator('.node[data-step="done"][data-status="complete"]').waitFor();
  });

  it("cancels an active run, then re-runs it as a new run that links back", async () => {
    const runId = await startWaiting();
    const page = await openWithToken(runId);
    expect(await page.locator("#rerun-run").isHidden()).toBe(true);
    await page.locator("#cancel-run").click();
    await page.locator('#run-status[data-status="canceled"]').waitFor();
    await page.locator("#rerun-run").waitFor();
    await page.locator("#rerun-run").click();
    await page.waitForURL((url) => url.pathname.endsWith("/view") && !url.pathname.includes(runId));
    await page.locator('.node[data-step="go-ahead"][data-status="waiting"]').waitFor();
    const back = page.locator("#rerun-of");
    await back.waitFor();
    expect(await back.getAttribute("href")).toBe(`/runs/${runId}/view`);
    await page.locator("#cancel-run").click();
    await page.locator('#run-status[data-status="canceled"]').waitFor();
  });
});

describe("front page", () => {
  it("lists every workflow with its auth and links to its runs, without credentials", async () => {
    const page = await stack.pages.open("/");
    const row = page.locator('#workflows tr[data-workflow="e2e-waiting"]');
    await row.waitFor();
    expect(await row.locator("td").nth(3).textContent()).toBe("bearer");
    expect(await page.locator('#workflows tr[data-workflow="e2e-pipeline"]').count()).toBe(1);
    expect(await page.content()).not.toContain(E2E_TOKEN);
    // Every column fits a 1280-pixel window, long descriptions too (they wrap).
    await page.setViewportSize({ width: 1280, height: 800 });
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    expect(overflow).toBeLessThanOrEqual(0);
    await row.locator("a.runs-link").click();
    await page.waitForURL(
      (url) => url.pathname === "/view/runs" && url.searchParams.get("workflow") === "e2e-waiting",
    );
  });
});
