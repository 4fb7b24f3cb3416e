/**
 * The Run form (docs/http-api.md, "Run from the page") in Chromium against the real Worker: built from
 * params.schema on the front page and on a workflow's runs page, filled by field name, sent with
 * the credential the page asks for, refusals shown beside their fields, success opening the run's
 * page; a workflow whose senders sign shows no form.
 */
import { describe, expect, it } from "vitest";
import { E2E_TOKEN, useViewerStack } from "./viewer-stack.ts";

const stack = useViewerStack();

describe("the Run form", () => {
  it("starts a run from the front page with the fields' values and opens its page", async () => {
    const page = await stack.pages.open("/");
    const row = page.locator('#workflows tr[data-workflow="e2e-form-order"]');
    await row.locator("details.run summary").click();
    const form = row.locator("form.run-form");
    await form.locator('[name="customer"]').fill("Ada");
    await form.locator('[name="qty"]').fill("2");
    await form.locator('[name="express"]').selectOption("true");
    await form.locator('[name="size"]').selectOption('"M"');
    await form.locator('[name="tags"]').fill('["gift"]');
    await form.locator('button[type="submit"]').click();
    // The workflow needs its credential: the page asks for it, then sends the run again.
    await page.locator("#credential-form").waitFor();
    await page.locator("#credential-value").fill(`Bearer ${E2E_TOKEN}`);
    await page.locator('#credential-form button[type="submit"]').click();
    await page.waitForURL(/\/runs\/[0-9a-f]{64}\/view$/);
    const runId = /\/runs\/([0-9a-f]{64})\/view$/.exec(page.url())?.[1];
    const envelope = await (
      await fetch(`${stack.worker().url}/runs/${runId}`, {
        headers: { authorization: `Bearer ${E2E_TOKEN}` },
      })
    ).json();
    expect(envelope.params).toEqual({ customer: "Ada", qty: 2, express: true, size: "M", tags: ["gift"] });
  });

  it("shows a refusal's errors beside their fields, on the workflow's runs page", async () => {
    const page = await stack.pages.open("/view/runs?workflow=e2e-form-order");
    await page.evaluate((t) => {
      sessionStorage.setItem(
        "workflow-edge.credential",
        JSON.stringify({ header: "Authorization", value: `Bearer ${t}` }),
      );
    }, E2E_TOKEN);
    await page.locator("details.run summary").click();
    const form = page.locator("form.run-form");
    await form.locator('[name="qty"]').fill("0");
    await form.locator('button[type="submit"]').click();
    await expect.poll(() => form.locator('[data-error-for="qty"]').textContent()).toMatch(/minimum|1/);
    expect(await form.locator('[data-error-for="customer"]').textContent()).toMatch(/customer/);
    expect(await form.locator(".run-form-notice").textContent()).toMatch(/^invalid_params/);
    expect(page.url()).toContain("/view/runs");
  });

  it("offers no form for a workflow whose senders sign", async () => {
    const page = await stack.pages.open("/");
    const row = page.locator('#workflows tr[data-workflow="e2e-form-signed"]');
    expect(await row.locator("form.run-form").count()).toBe(0);
    expect(await row.locator(".run-form-none").textContent()).toContain("github");
  });
});
