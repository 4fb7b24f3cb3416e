/**
 * The run list page (/view/runs) in a real browser against the real Worker (`wrangler dev`): a
 * workflow's runs newest first from GET /runs, page by page with Older / Newer, filtered by
 * status, a running run followed to its end without a reload, and a protected workflow's list
 * behind its credentials.
 */

import type { Page } from "playwright-core";
import { beforeAll, describe, expect, it } from "vitest";
import { poll } from "../support/poll.ts";
import { E2E_TOKEN, useViewerStack } from "./viewer-stack.ts";

const stack = useViewerStack();
/** The Worker's origin, e.g. `http://127.0.0.1:8787`. */
const base = () => stack.worker().url;
/** Run ids of the fixture runs, oldest first; the third one failed. */
const created: string[] = [];

interface Listed {
  run_id: string;
  status: string;
}

async function api(path: string, headers: Record<string, string> = {}): Promise<{ runs: Listed[] }> {
  const res = await fetch(`${base()}${path}`, { headers });
  expect(res.status).toBe(200);
  return (await res.json()) as { runs: Listed[] };
}

/** Polls `done` (outside a test, where expect.poll is not available). */
async function until(done: () => Promise<boolean>, timeoutMs = 15_000): Promise<void> {
  await poll("the listing to catch up", done, (ok) => ok, { timeoutMs, intervalMs: 200 });
}

async function invoke(body: unknown, wait: boolean): Promise<string> {
  const res = await fetch(`${base()}/invoke/e2e-runs-list`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(wait ? { prefer: "wait=30" } : {}) },
    body: JSON.stringify(body),
  });
  expect(res.status).toBe(wait ? 200 : 202);
  return ((await res.json()) as { run_id: string }).run_id;
}

beforeAll(async () => {
  // Five finished runs, one after the other (so their order is known): the third one fails.
  for (let i = 0; i < 5; i++) created.push(await invoke({ ms: 0, n: i === 2 ? "x" : i }, true));
  // The listing may lag a run by a few seconds: wait until all five are listed as finished.
  await until(async () => {
    const { runs } = await api("/runs?workflow=e2e-runs-list&limit=100");
    return runs.filter((r) => r.status === "complete" || r.status === "failed").length === 5;
  });
});

function open(path: string): Promise<Page> {
  return stack.pages.open(path);
}

async function rows(page: Page): Promise<Array<{ run: string; status: string }>> {
  return page.$$eval("#runs tbody tr[data-run]", (els) =>
    els.map((e) => ({
      run: (e as HTMLElement).dataset.run ?? "",
      status: (e as HTMLElement).dataset.status ?? "",
    })),
  );
}

const newestFirst = () => [...created].reverse();

describe("run list page", () => {
  it("pages through the runs newest first with Older and Newer", async () => {
    const page = await open("/view/runs?workflow=e2e-runs-list&limit=2");
    await page.locator("#runs tbody tr[data-run]").first().waitFor();
    const order = newestFirst();
    expect((await rows(page)).map((r) => r.run)).toEqual(order.slice(0, 2));
    expect(await page.locator("#newer").isDisabled()).toBe(true);
    expect(await page.locator("#page-number").textContent()).toBe("Page 1");

    await page.locator("#older").click();
    await expect.poll(async () => (await rows(page)).map((r) => r.run)).toEqual(order.slice(2, 4));
    expect(await page.locator("#page-number").textContent()).toBe("Page 2");
    await page.locator("#older").click();
    await expect.poll(async () => (await rows(page)).map((r) => r.run)).toEqual(order.slice(4, 5));
    expect(await page.locator("#older").isDisabled()).toBe(true);

    await page.locator("#newer").click();
    await expect.poll(async () => (await rows(page)).map((r) => r.run)).toEqual(order.slice(2, 4));
    await page.locator("#newer").click();
    await expect.poll(async () => (await rows(page)).map((r) => r.run)).toEqual(order.slice(0, 2));
    expect(await page.locator("#newer").isDisabled()).toBe(true);
  });

  it("filters by status, and the filter is kept in the address", async () => {
    const page = await open("/view/runs?workflow=e2e-runs-list");
    await page.locator("#runs tbody tr[data-run]").first().waitFor();
    expect(await rows(page)).toHaveLength(5);
    await page.locator("#status-filter").selectOption("failed");
    await expect.poll(async () => rows(page)).toEqual([{ run: created[2], status: "failed" }]);
    expect(new URL(page.url()).searchParams.get("status")).toBe("failed");
    await page.locator("#status-filter").selectOption("complete");
    await expect.poll(async () => (await rows(page)).length).toBe(4);
    expect((await rows(page)).every((r) => r.status === "complete")).toBe(true);
    await page.locator("#status-filter").selectOption("canceled");
    await page.locator("#notice").filter({ hasText: "No canceled runs yet." }).waitFor();
    expect(await rows(page)).toEqual([]);
  });

  it("opens a run's viewer from its row", async () => {
    const page = await open("/view/runs?workflow=e2e-runs-list");
    const newest = created[created.length - 1] as string;
    await page.locator(`#runs tr[data-run="${newest}"] a`).click();
    await page.waitForURL(`**/runs/${newest}/view`);
    await page.locator('#run-status[data-status="complete"]').waitFor();
  });

  it("shows a new run running, then complete, without a reload", async () => {
    const page = await open("/view/runs?workflow=e2e-runs-list");
    await page.locator("#runs tbody tr[data-run]").first().waitFor();
    let navigations = 0;
    page.on("framenavigated", (f) => {
      if (f === page.mainFrame()) navigations++;
    });
    const runId = await invoke({ ms: 6000, n: 1 }, false);
    // The list is refreshed by hand once; from then on the page follows the running run.
    const row = page.locator(`#runs tr[data-run="${runId}"]`);
    await expect
      .poll(
        async () => {
          await page.locator("#refresh").click();
          return row.getAttribute("data-status", { timeout: 500 }).catch(() => null);
        },
        { timeout: 10_000 },
      )
      .toBe("running");
    await page.locator(`#runs tr[data-run="${runId}"][data-status="complete"]`).waitFor({ timeout: 20_000 });
    expect(navigations).toBe(0);
  });

  it("asks for a protected workflow's credentials before listing its runs", async () => {
    const res = await fetch(`${base()}/invoke/e2e-protected`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${E2E_TOKEN}`,
        prefer: "wait=30",
        "content-type": "application/json",
      },
      body: "{}",
    });
    expect(res.status).toBe(200);
    const { run_id } = (await res.json()) as { run_id: string };
    await expect
      .poll(
        async () =>
          (await api("/runs?workflow=e2e-protected", { authorization: `Bearer ${E2E_TOKEN}` })).runs.length,
        {
          timeout: 15_000,
        },
      )
      .toBe(1);
    const page = await open("/view/runs?workflow=e2e-protected");
    await page.locator("#credential-form").waitFor();
    await page.locator("#credential-value").fill(`Bearer ${E2E_TOKEN}`);
    await page.locator('#credential-form button[type="submit"]').click();
    await page.locator(`#runs tr[data-run="${run_id}"]`).waitFor();
    expect(page.url()).not.toContain(E2E_TOKEN);
  });

  it("says what is wrong with an unknown workflow", async () => {
    const page = await open("/view/runs?workflow=no-such-workflow");
    await page.locator('#notice[data-kind="error"]').waitFor();
    expect(await page.locator("#notice").textContent()).toContain("Workflow not found");
  });
});
