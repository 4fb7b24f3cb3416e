/**
 * The run viewer's fan-out step in a real browser against the real Worker (`wrangler dev`) and a
 * real webhook target: one node with its item count (no node per item), and, selected, a table
 * of its items with status, duration and cost, each row opening that item's record; a running
 * fan-out's count and table follow the run live.
 */
import type { Page } from "playwright-core";
import { beforeAll, describe, expect, it } from "vitest";
import { useViewerStack } from "./viewer-stack.ts";

const stack = useViewerStack();
/** The Worker's origin, e.g. `http://127.0.0.1:8787`. */
const base = () => stack.worker().url;

function open(path: string): Promise<Page> {
  return stack.pages.open(path);
}

// biome-ignore lint/suspicious/noExplicitAny: envelopes are checked field by field
type Envelope = any;

async function invoke(body: unknown, wait: boolean): Promise<Envelope> {
  const res = await fetch(`${base()}/invoke/e2e-fanout`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(wait ? { prefer: "wait=30" } : {}) },
    body: JSON.stringify(body),
  });
  expect(res.status).toBe(wait ? 200 : 202);
  return res.json();
}

async function itemRows(page: Page): Promise<Array<{ item: string; status: string; cells: string[] }>> {
  return page.$$eval("#details-items tbody tr", (rows) =>
    rows.map((r) => ({
      item: (r as HTMLElement).dataset.item ?? "",
      status: (r as HTMLElement).dataset.status ?? "",
      cells: [...r.querySelectorAll("td")].map((td) => td.textContent ?? ""),
    })),
  );
}

describe("a finished fan-out", () => {
  let run: Envelope;
  beforeAll(async () => {
    run = await invoke(
      { items: [{ route: "hold/120" }, { route: "status/400" }, { route: "echo" }, { route: "hold/60" }] },
      true,
    );
    expect(run.status).toBe("complete");
  });

  async function openRun(): Promise<Page> {
    const page = await open(`/runs/${run.run_id}/view`);
    await page.locator('#run-status[data-status="complete"]').waitFor();
    await page.locator('.node[data-step="post"][data-status="complete"]').waitFor();
    return page;
  }

  it("draws the fan-out as one node with its item count, and no node per item", async () => {
    const page = await openRun();
    const post = page.locator('.node[data-step="post"]');
    expect(await post.getAttribute("data-fan-out")).toBe("true");
    const badge = post.locator(".items");
    expect(await badge.getAttribute("data-items")).toBe("4");
    expect(await badge.getAttribute("data-items-done")).toBe("4");
    expect(await badge.textContent()).toBe("4 items");
    const steps = await page.$$eval(".node[data-step]", (els) =>
      els.map((e) => (e as HTMLElement).dataset.step),
    );
    expect(steps).toEqual(["post", "count"]);
    // The timeline lists the step, not its items.
    expect(await page.locator('#timeline tr[data-step^="post/"]').count()).toBe(0);
  });

  it("lists the items with status, duration and cost when the step is selected", async () => {
    const page = await openRun();
    expect(await page.locator("#details-items-box").isHidden()).toBe(true);
    await page.locator('.node[data-step="post"] > .node-head').click();
    await page.locator("#details-items tbody tr").first().waitFor();
    const rows = await itemRows(page);
    expect(rows.map((r) => [r.item, r.status])).toEqual([
      ["0", "complete"],
      ["1", "failed"],
      ["2", "complete"],
      ["3", "complete"],
    ]);
    // Item, status, duration, cost, error code.
    const [first, failed] = rows;
    expect(first?.cells[1]).toBe("complete");
    expect(first?.cells[2]).toMatch(/^\d+(\.\d+)? (ms|s)$/);
    expect(Number.parseInt(first?.cells[2] ?? "", 10)).toBeGreaterThanOrEqual(120);
    expect(first?.cells[3]).toMatch(/^\$0(\.0+)?$/);
    expect(failed?.cells[4]).toBe("webhook_failed");
    expect(await page.locator("#details-items-title").textContent()).toBe("Items (4 started)");
    expect(await page.locator('#details-fields [data-field="Items"]').textContent()).toBe("4 items");
  });

  it("opens an item's own record from its row", async () => {
    const page = await openRun();
    await page.locator('.node[data-step="post"] > .node-head').click();
    await page.locator('#details-items tr[data-item="1"]').click();
    await expect.poll(() => page.locator("#details-title").textContent()).toBe("post · item 1");
    expect(await page.locator("#details-error").textContent()).toContain("webhook_failed");
    expect(await page.locator('#details-fields [data-field="Status"]').textContent()).toBe("failed");
    // The table of its step stays in view, the item highlighted by selection.
    expect(await itemRows(page)).toHaveLength(4);
    await page.locator('#details-items tr[data-item="2"]').click();
    await expect.poll(() => page.locator("#details-title").textContent()).toBe("post · item 2");
    expect(JSON.parse((await page.locator("#details-output").textContent()) ?? "null")).toMatchObject({
      status: 200,
      body: { body: { index: 2 } },
    });
  });
});

describe("a running fan-out", () => {
  it("counts and lists items live as they start and finish, without a reload", async () => {
    const items = Array.from({ length: 6 }, () => ({ route: "hold/700" }));
    const { run_id } = await invoke({ items }, false);
    const page = await open(`/runs/${run_id}/view`);
    await page.locator('.node[data-step="post"][data-status="running"]').waitFor();
    await page.locator('.node[data-step="post"] > .node-head').click();
    const badge = page.locator('.node[data-step="post"] .items');
    // Every state the badge goes through, as the page draws it (no sampling to miss one).
    await badge.evaluate((e) => {
      const seen: Array<{ items: number; done: number; text: string }> = [];
      const note = () => {
        const el = e as HTMLElement;
        const s = {
          items: Number(el.dataset.items),
          done: Number(el.dataset.itemsDone),
          text: el.textContent ?? "",
        };
        const last = seen[seen.length - 1];
        if (!last || last.items !== s.items || last.done !== s.done || last.text !== s.text) seen.push(s);
      };
      note();
      new MutationObserver(note).observe(e, {
        attributes: true,
        childList: true,
        characterData: true,
        subtree: true,
      });
      (window as unknown as { badgeStates: typeof seen }).badgeStates = seen;
    });
    await page.locator('#run-status[data-status="complete"]').waitFor({ timeout: 20_000 });
    expect(await badge.textContent()).toBe("6 items");
    const states = await page.evaluate(
      () =>
        (window as unknown as { badgeStates: Array<{ items: number; done: number; text: string }> })
          .badgeStates,
    );
    // Counted live: never backwards, and once seen with items done while the rest had not all
    // started (two in flight at a time), each state written as the page shows it.
    for (let i = 1; i < states.length; i++) {
      expect(states[i]?.items).toBeGreaterThanOrEqual(states[i - 1]?.items as number);
      expect(states[i]?.done).toBeGreaterThanOrEqual(states[i - 1]?.done as number);
    }
    expect(states.some((s) => s.done >= 1 && s.items < 6)).toBe(true);
    for (const s of states.filter((x) => x.done < x.items))
      expect(s.text).toBe(`${s.items} items · ${s.done} done`);
    // The table, open since before, follows too.
    await expect
      .poll(async () => (await itemRows(page)).map((r) => r.status))
      .toEqual(Array(6).fill("complete"));
    expect(await page.evaluate(() => performance.getEntriesByType("navigation").length)).toBe(1);
  });
});
