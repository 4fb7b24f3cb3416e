/**
 * Every page on a phone (390×844, iPhone 12–15 in CSS pixels) in Chromium: nothing wider than the
 * screen, so no page scrolls sideways; the front page's workflows stacked one under another; the
 * run page's graph, timeline and details all within the width, a long run id wrapped; and no
 * request answered 404 (the favicon included).
 */
import type { Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import { useViewerStack } from "./viewer-stack.ts";

const stack = useViewerStack();
const PHONE = { width: 390, height: 844 };

/** Opens `path` at the phone's size and waits for `ready`; fails on any 404 the page asked for. */
async function openOnPhone(path: string, ready: string): Promise<Page> {
  const page = await stack.pages.open("/health");
  await page.setViewportSize(PHONE);
  const missing: string[] = [];
  page.on("response", (r) => {
    if (r.status() === 404) missing.push(r.url());
  });
  await page.goto(`${stack.worker().url}${path}`);
  await page.locator(ready).first().waitFor();
  // The favicon is asked for after the load; wait until it was answered.
  await page.waitForLoadState("networkidle");
  expect(missing).toEqual([]);
  return page;
}

/** What sticks out past the screen's right edge (empty when the page fits). */
function overflow(page: Page): Promise<{ scrollWidth: number; wide: string[] }> {
  return page.evaluate(() => {
    const width = document.documentElement.clientWidth;
    const wide = [...document.querySelectorAll<HTMLElement>("body *")]
      .filter((e) => e.offsetParent !== null && e.getBoundingClientRect().right > width + 0.5)
      .filter((e) => !e.closest(".graph") || e.classList.contains("graph"))
      .map(
        (e) => `${e.tagName.toLowerCase()}${e.id ? `#${e.id}` : ""}${e.className ? `.${e.className}` : ""}`,
      );
    return { scrollWidth: document.documentElement.scrollWidth, wide };
  });
}

async function invoke(name: string, body: unknown): Promise<string> {
  const res = await fetch(`${stack.worker().url}/invoke/${name}`, {
    method: "POST",
    headers: { "content-type": "application/json", prefer: "wait=30" },
    body: JSON.stringify(body),
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { run_id: string }).run_id;
}

describe("the pages on a phone", () => {
  it("front page: every workflow within the screen, stacked, its Run form too", async () => {
    const page = await openOnPhone("/", "#workflows tr[data-workflow]");
    await page.locator('tr[data-workflow="e2e-pipeline"] details.run > summary').click();
    expect(await overflow(page)).toEqual({ scrollWidth: PHONE.width, wide: [] });
    const rows = await page
      .locator("#workflows tbody tr")
      .evaluateAll((trs) => trs.slice(0, 3).map((tr) => tr.getBoundingClientRect().width));
    for (const w of rows) expect(w).toBeLessThanOrEqual(PHONE.width);
  });

  it("run page of a run with a sub-workflow: graph, timeline and details within the screen", async () => {
    const runId = await invoke("e2e-pipeline", { delay_ms: 10, settle_ms: 0, note: "phone" });
    const page = await openOnPhone(`/runs/${runId}/view`, '#run-status[data-status="complete"]');
    await page.locator('.node[data-step="notify/post"]').waitFor();
    expect(await overflow(page)).toEqual({ scrollWidth: PHONE.width, wide: [] });
    // The run id is shown whole, wrapped, not cut.
    expect(await page.locator("#run-id").textContent()).toBe(runId);
    const graph = await page.locator("#graph-root > .graph").evaluate((g) => ({
      scroll: g.scrollWidth,
      client: g.clientWidth,
    }));
    expect(graph.scroll).toBeLessThanOrEqual(graph.client);
  });

  it("run page of a fan-out: its items within the screen", async () => {
    const runId = await invoke("e2e-fanout", {
      items: [{ route: "echo" }, { route: "echo" }, { route: "echo" }],
    });
    const page = await openOnPhone(`/runs/${runId}/view`, '#run-status[data-status="complete"]');
    await page.locator('.node[data-step="post"]').click();
    await page.locator("#details-items tbody tr").first().waitFor();
    expect(await overflow(page)).toEqual({ scrollWidth: PHONE.width, wide: [] });
  });

  it("run list: every run's row within the screen", async () => {
    await invoke("e2e-pipeline", { delay_ms: 10, settle_ms: 0, note: "list" });
    const page = await openOnPhone("/view/runs?workflow=e2e-pipeline", "#runs tbody tr");
    expect(await overflow(page)).toEqual({ scrollWidth: PHONE.width, wide: [] });
  });
});
