/**
 * The run viewer in a real browser against the real Worker (`wrangler dev`), with webhook steps
 * calling a real local HTTP server: what a user sees for a finished run, a failed run, a run that
 * is still going (the page follows it live without a reload), a run that needs credentials, and
 * the run list.
 */

import type { Page } from "playwright-core";
import { beforeAll, describe, expect, it } from "vitest";
import { poll } from "../support/poll.ts";
import { E2E_SECRET, E2E_TOKEN, useViewerStack } from "./viewer-stack.ts";

const stack = useViewerStack();
/** The Worker's origin, e.g. `http://127.0.0.1:8787`. */
const base = () => stack.worker().url;

function open(path: string): Promise<Page> {
  return stack.pages.open(path);
}

// biome-ignore lint/suspicious/noExplicitAny: envelopes are checked field by field
type Envelope = any;

async function invoke(
  name: string,
  body: unknown,
  headers: Record<string, string> = {},
  wait = true,
): Promise<Envelope> {
  const res = await fetch(`${base()}/invoke/${name}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(wait ? { prefer: "wait=30" } : {}), ...headers },
    body: JSON.stringify(body),
  });
  expect(res.status).toBe(wait ? 200 : 202);
  return res.json();
}

async function statuses(page: Page): Promise<Record<string, string>> {
  return page.$$eval(".node[data-step]", (els) =>
    Object.fromEntries(els.map((e) => [(e as HTMLElement).dataset.step, (e as HTMLElement).dataset.status])),
  );
}

function node(page: Page, path: string) {
  return page.locator(`.node[data-step="${path}"]`);
}

describe("viewer of a finished run", () => {
  let run: Envelope;
  beforeAll(async () => {
    run = await invoke("e2e-pipeline", { delay_ms: 100, settle_ms: 0, note: "hello" });
    expect(run.status).toBe("complete");
  });

  async function openRun(): Promise<Page> {
    const page = await open(`/runs/${run.run_id}/view`);
    await page.locator('#run-status[data-status="complete"]').waitFor();
    await node(page, "summary").waitFor();
    return page;
  }

  it("draws every step, sub-workflow steps included, with its final status", async () => {
    const page = await openRun();
    expect(await statuses(page)).toEqual({
      prepare: "complete",
      "slow-call": "complete",
      "quick-call": "complete",
      "vip-only": "skipped",
      notify: "complete",
      "notify/format": "complete",
      "notify/post": "complete",
      settle: "complete",
      summary: "complete",
    });
  });

  it("nests a sub-workflow's steps inside its workflow step", async () => {
    const page = await openRun();
    expect(await node(page, "notify").locator('.node[data-step="notify/post"]').count()).toBe(1);
    expect(
      await page.locator('.graph:not(.node .graph) > .column .node[data-step="notify/post"]').count(),
    ).toBe(1);
  });

  it("draws one edge per dependency", async () => {
    const page = await openRun();
    const edges = await page.$$eval("svg.edges path", (ps) => ps.map((p) => p.getAttribute("data-edge")));
    expect(edges.sort()).toEqual(
      [
        "prepare -> slow-call",
        "prepare -> quick-call",
        "prepare -> vip-only",
        "slow-call -> notify",
        "quick-call -> notify",
        "notify -> settle",
        "settle -> summary",
        "vip-only -> summary",
        "notify/format -> notify/post",
      ].sort(),
    );
  });

  it("shows the run's workflow, version and status", async () => {
    const page = await openRun();
    expect(await page.locator("#workflow-name").textContent()).toBe("e2e-pipeline");
    expect(await page.locator("#workflow-version").textContent()).toBe("v1.2.0");
    expect(await page.locator("#run-status").textContent()).toBe("complete");
  });

  it("links the run's trace id to the operator's tracing backend (TRACE_URL)", async () => {
    const page = await openRun();
    const link = page.locator("#trace-link");
    expect(await link.textContent()).toBe(run.trace_id);
    expect(await link.getAttribute("href")).toBe(
      `https://traces.example.com/trace/${run.trace_id}?from=viewer`,
    );
    expect(await page.locator("#trace-line").isVisible()).toBe(true);
  });

  it("shows a clicked step's output, with secrets masked, and its metrics", async () => {
    const page = await openRun();
    await node(page, "quick-call").locator(".node-head").click();
    await expect.poll(() => page.locator("#details-title").textContent()).toBe("quick-call");
    const output = JSON.parse((await page.locator("#details-output").textContent()) ?? "null");
    expect(output.status).toBe(200);
    expect(output.body.body).toEqual({ note: "hello" });
    expect(output.body.headers["x-e2e-secret"]).toBe("***");
    expect(await page.locator('#details [data-field="Attempts"]').textContent()).toBe("1");
    expect(await page.content()).not.toContain(E2E_SECRET);
  });

  it("shows a timeline row with a duration bar for every step that ran", async () => {
    const page = await openRun();
    const rows = page.locator("#timeline tbody tr[data-step]");
    expect(await rows.count()).toBe(9);
    const slowBar = await page.locator('#timeline tr[data-step="slow-call"] .bar').boundingBox();
    expect(slowBar?.width ?? 0).toBeGreaterThan(0);
    expect(await page.locator('#timeline tr[data-step="vip-only"] .bar').isHidden()).toBe(true);
  });
});

describe("viewer of a failed run", () => {
  it("marks the failing step failed, the rest skipped, and shows its error", async () => {
    const run = await invoke("e2e-failing", {});
    expect(run.status).toBe("failed");
    const page = await open(`/runs/${run.run_id}/view`);
    await page.locator('#run-status[data-status="failed"]').waitFor();
    await node(page, "after").waitFor();
    expect(await statuses(page)).toEqual({ first: "complete", rejected: "failed", after: "skipped" });
    await node(page, "rejected").locator(".node-head").click();
    const error = JSON.parse((await page.locator("#details-error").textContent()) ?? "null");
    expect(error.code).toBe("webhook_failed");
  });
});

describe("viewer of a compensated run", () => {
  it("lists what the failed run undid, and retries a failed compensation from its button", async () => {
    const run = await invoke("e2e-saga", { key: `saga-${Date.now()}` });
    expect(run.status).toBe("failed");
    const page = await open(`/runs/${run.run_id}/view`);
    await page.locator('#compensation-status[data-status="failed"]').waitFor();
    await page.locator('#compensation-list li[data-step="reserve"][data-status="failed"]').waitFor();
    expect(await page.locator("#compensation-list li").count()).toBe(1);
    await page.locator("#compensate-run").click();
    await page.locator('#compensation-list li[data-step="reserve"][data-status="complete"]').waitFor();
    await page.locator('#compensation-status[data-status="complete"]').waitFor();
    expect(await page.locator("#compensate-run").isHidden()).toBe(true);
  });
});

describe("viewer of an unknown run", () => {
  it("says the run does not exist", async () => {
    const page = await open(`/runs/${"0".repeat(64)}/view`);
    await page.locator('#notice[data-kind="error"]').waitFor();
    expect(await page.locator("#notice").textContent()).toContain("No run with this id");
    expect(await page.locator(".node[data-step]").count()).toBe(0);
  });
});

describe("viewer of a running run", () => {
  it("turns a running step complete without a reload", async () => {
    const accepted = await invoke(
      "e2e-pipeline",
      { delay_ms: 3000, settle_ms: 3000, note: "live" },
      {},
      false,
    );
    const page = await open(`/runs/${accepted.run_id}/view`);
    let navigations = 0;
    page.on("framenavigated", (f) => {
      if (f === page.mainFrame()) navigations++;
    });
    const slow = node(page, "slow-call");
    await slow.and(page.locator('[data-status="running"]')).waitFor({ timeout: 10_000 });
    expect(await page.locator("body").getAttribute("data-live")).toBe("open");

    await slow.and(page.locator('[data-status="complete"]')).waitFor({ timeout: 10_000 });
    // `settle` keeps the run going: only the event stream can have told the page about slow-call.
    expect(await page.locator("#run-status").getAttribute("data-status")).toBe("running");
    await node(page, "settle").and(page.locator('[data-status="running"]')).waitFor({ timeout: 5_000 });
    expect(await page.locator('#timeline tr[data-step="slow-call"]').getAttribute("data-status")).toBe(
      "complete",
    );

    await page.locator('#run-status[data-status="complete"]').waitFor({ timeout: 15_000 });
    await node(page, "summary").and(page.locator('[data-status="complete"]')).waitFor();
    await page.locator('body[data-live="closed"]').waitFor();
    expect(await page.locator("#notice").isHidden()).toBe(true);
    expect(navigations).toBe(0);
  });
});

describe("viewer of a run that needs credentials", () => {
  it("asks for the workflow's credentials, refuses wrong ones, then shows the run", async () => {
    const run = await invoke("e2e-protected", {}, { authorization: `Bearer ${E2E_TOKEN}` });
    const page = await open(`/runs/${run.run_id}/view`);
    const form = page.locator("#credential-form");
    await form.waitFor();
    expect(await page.locator("#credential-header").inputValue()).toBe("Authorization");

    await page.locator("#credential-value").fill("Bearer wrong-token-000");
    await page.locator('#credential-form button[type="submit"]').click();
    await expect.poll(() => page.locator("#credential-reason").textContent()).toContain("refused");
    await form.waitFor();

    await page.locator("#credential-value").fill(`Bearer ${E2E_TOKEN}`);
    await page.locator('#credential-form button[type="submit"]').click();
    await node(page, "greet").and(page.locator('[data-status="complete"]')).waitFor();
    expect(await form.isHidden()).toBe(true);
    expect(page.url()).not.toContain(E2E_TOKEN);
    expect(await page.evaluate(() => sessionStorage.getItem("workflow-edge.credential"))).toContain(
      E2E_TOKEN,
    );
  });
});

describe("run list", () => {
  it("lists a workflow's runs with links to their viewers", async () => {
    const run = await invoke("e2e-pipeline", { delay_ms: 0, settle_ms: 0, note: "listed" });
    // The run index is written just after the invoke answers (waitUntil); wait for it first.
    await expect
      .poll(async () => {
        const res = await fetch(`${base()}/runs?workflow=e2e-pipeline`);
        return ((await res.json()) as { runs: Array<{ run_id: string }> }).runs.map((r) => r.run_id);
      })
      .toContain(run.run_id);
    const page = await open("/view/runs?workflow=e2e-pipeline");
    const row = page.locator(`#runs tr[data-run="${run.run_id}"]`);
    await row.waitFor();
    expect(await row.getAttribute("data-status")).toBe("complete");
    await row.locator("a").click();
    await page.waitForURL(`**/runs/${run.run_id}/view`);
    await page.locator('#run-status[data-status="complete"]').waitFor();
  });
});

describe("viewer of a run that waits to start", () => {
  it("says why a queued run waits and when it starts, then how many invokes it stood for", async () => {
    const first = await invoke("e2e-debounced", { n: 1 }, {}, false);
    const second = await invoke("e2e-debounced", { n: 2 }, {}, false);
    expect(second.run_id).toBe(first.run_id);
    const page = await open(`/runs/${first.run_id}/view`);
    const queued = page.locator('#summary [data-field="Queued"] dd');
    await queued.waitFor();
    expect(await queued.textContent()).toMatch(/^by debounce, expected to start /);
    // The page follows the run to its end without a reload.
    await page.locator('#run-status[data-status="complete"]').waitFor({ timeout: 10_000 });
    expect(await page.locator('#summary [data-field="Coalesced"] dd').textContent()).toBe("2 invokes");
    expect(await page.locator('#summary [data-field="Queued"]').count()).toBe(0);
  });
});

describe("viewer of a run whose notification failed", () => {
  it("lists the delivery with each attempt and why it failed", async () => {
    const e = await invoke("e2e-notified", {});
    const page = await open(`/runs/${e.run_id}/view`);
    // The page loads the deliveries with the run; reload until both attempts were made.
    const failed = page.locator(
      `#deliveries [data-delivery="msg_${e.run_id}_run.complete"][data-state="failed"]`,
    );
    await poll(
      "the page to show the failed delivery",
      async () => {
        if ((await failed.count()) === 0) await page.reload();
        return failed.count();
      },
      (n) => n > 0,
      { intervalMs: 300 },
    );
    expect(await failed.locator("li").allTextContents()).toEqual([
      expect.stringMatching(/: http_503$/),
      expect.stringMatching(/: http_503$/),
    ]);
  });
});
