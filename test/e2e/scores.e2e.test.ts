/**
 * A workflow's scores on its runs page (/view/runs) in a real browser against the real Worker: the
 * table of each step, scorer, version and arm, and the scorer's daily chart drawn by the server;
 * a scored step's scores in the run viewer's details.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { poll } from "../support/poll.ts";
import { useViewerStack } from "./viewer-stack.ts";

const stack = useViewerStack();
const base = () => stack.worker().url;

let lastRun = "";

beforeAll(async () => {
  for (const quality of [0.2, 0.4, 0.9]) {
    const res = await fetch(`${base()}/invoke/e2e-scored`, {
      method: "POST",
      headers: { "content-type": "application/json", prefer: "wait=30" },
      body: JSON.stringify({ quality }),
    });
    expect(res.status).toBe(200);
    lastRun = ((await res.json()) as { run_id: string }).run_id;
  }
  await poll(
    "the three scored runs in the report",
    async () =>
      (
        (await (await fetch(`${base()}/workflows/e2e-scored/scores`)).json()) as {
          scores: Array<{ count: number }>;
        }
      ).scores,
    (scores) => scores[0]?.count === 3,
    { timeoutMs: 20_000, intervalMs: 200 },
  );
});

describe("the runs page's scores", () => {
  it("shows each scorer's count, mean and percentiles, and its daily chart", async () => {
    const page = await stack.pages.open("/view/runs?workflow=e2e-scored");
    await page.waitForSelector("#scores:not([hidden]) #score-table tr[data-scorer='quality']");
    const cells = await page.$$eval("#score-table tr[data-scorer='quality'] td", (tds) =>
      tds.map((td) => td.textContent),
    );
    expect(cells).toEqual(["answer", "quality", "", "", "3", "0.50", "0.24", "0.40", "0.80"]);
    const dot = await page.waitForSelector("#score-charts svg[data-scorer='quality'] circle[data-mean]");
    expect(await dot.getAttribute("data-mean")).toBe("0.5000");
    expect(await page.$$eval("#score-charts svg path.line", (ps) => ps.length)).toBe(1);
  });
});

describe("a scored run's viewer", () => {
  it("shows a clicked step's scores in its details", async () => {
    const page = await stack.pages.open(`/runs/${lastRun}/view`);
    await page.locator('.node[data-step="answer"] .node-head').click();
    await expect.poll(() => page.locator("#details-title").textContent()).toBe("answer");
    expect(await page.locator('#details [data-field="Score quality"]').textContent()).toBe("0.9");
  });
});
