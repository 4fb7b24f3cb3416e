/**
 * Search keys (docs/http-api.md, "Search keys"): a workflow's `search:` values are rendered when a
 * run starts, masked and cut to 64 characters, kept in the run's listing entry, and
 * `GET /runs?workflow=NAME&search.<key>=<value>` lists the runs with those values, with the other
 * filters and the cursor as usual. A key the workflow does not declare is 400 `invalid_query`.
 */

import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { poll } from "../../support/poll.ts";
import { call, run, uniqueKey } from "../../worker/harness.ts";

interface Listed {
  run_id: string;
  status: string;
  search?: Record<string, string>;
}
interface Page {
  runs: Listed[];
  next_cursor: string | null;
}

const list = async (query: string): Promise<Page> => {
  const res = await call(`/runs?workflow=search-orders&${query}`);
  expect(res.status).toBe(200);
  return (await res.json()) as Page;
};

/** Polls until the filtered listing holds `n` runs (entries are written a moment after the runs end). */
function listedRuns(query: string, n: number): Promise<Listed[]> {
  const everyPage = async () => {
    const all: Listed[] = [];
    let cursor: string | null = null;
    do {
      const page: Page = await list(`${query}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
      all.push(...page.runs);
      cursor = page.next_cursor;
    } while (cursor);
    return all;
  };
  return poll(`${n} runs listed for ${query}`, everyPage, (all) => all.length >= n, {
    timeoutMs: 12_000,
    intervalMs: 100,
  });
}

describe("search keys", () => {
  it("lists the runs with a search value, showing the values, page by page with the cursor", async () => {
    const customer = uniqueKey("cust");
    const other = uniqueKey("cust");
    const mine = [];
    for (const region of ["eu", "us", "eu"])
      mine.push((await run("search-orders", { customer_id: customer, region })).run_id);
    await run("search-orders", { customer_id: other, region: "eu" });
    const found = await listedRuns(`search.customer=${customer}&limit=2`, 3);
    expect(found.map((r) => r.run_id).sort()).toEqual([...mine].sort());
    expect(found[0]?.search).toMatchObject({ customer });
    const first = await list(`search.customer=${customer}&limit=2`);
    expect(first.runs).toHaveLength(2);
    expect(first.next_cursor).not.toBeNull();
    // Combined with another key and with the status filter.
    const eu = await listedRuns(`search.customer=${customer}&search.region=eu&status=complete`, 2);
    expect(eu.map((r) => r.run_id).sort()).toEqual([mine[0], mine[2]].sort());
    // A cursor made with one search value is not one of another's.
    const wrong = await call(
      `/runs?workflow=search-orders&search.customer=${other}&cursor=${encodeURIComponent(first.next_cursor as string)}`,
    );
    expect(wrong.status).toBe(400);
  });

  it("keeps values masked and at most 64 characters", async () => {
    const customer = uniqueKey("cust");
    const secret = (env as unknown as Record<string, string>).WEBHOOK_SECRET as string;
    await run("search-orders", { customer_id: customer, note: `key ${secret} ${"x".repeat(100)}` });
    const [entry] = await listedRuns(`search.customer=${customer}`, 1);
    expect(entry?.search?.note).not.toContain(secret);
    expect(entry?.search?.note?.startsWith("key ***")).toBe(true);
    expect([...(entry?.search?.note ?? "")].length).toBe(64);
    expect(entry?.search?.region).toBe("none");
  });

  it("refuses a key the workflow does not declare: 400 invalid_query", async () => {
    const res = await call("/runs?workflow=search-orders&search.email=a@b.c");
    expect(res.status).toBe(400);
    const body = (await res.json()) as { code: string; detail: string };
    expect(body.code).toBe("invalid_query");
    expect(body.detail).toMatch(
      /`email` is not a search key of search-orders \(declared: customer, region, note\)/,
    );
    const none = await call("/runs?workflow=basic&search.customer=1");
    expect(((await none.json()) as { detail: string }).detail).toMatch(/basic declares no search keys/);
  });
});
