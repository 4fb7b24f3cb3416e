/**
 * Approvals in the run viewer, in headless Chromium against the real Worker under `wrangler dev`
 * (so the MCP client runs in workerd as deployed, not only in the vitest pool), with the model
 * stub and the logging MCP server on 127.0.0.1: a run whose agent waits for a human shows the
 * approval with its arguments; Approve lets the call happen and the run complete, Reject (with
 * a comment) tells the model and the call never happens.
 */
import type { Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startMcpTools } from "../servers/mcp-tools.ts";
import { startModelStub } from "../servers/model-stub.ts";
import { startServerEverything } from "../servers/server-everything.ts";
import { type Browser, launchBrowser, PageTracker } from "./browser.ts";
import { startWorker, type WorkerProcess } from "./worker-process.ts";

const E2E_TOKEN = "e2e-approval-token-4f2a9c";
const MODEL_API_KEY = "sk-e2e-approvals-key-1234";

let model: { port: number; close(): Promise<void> };
let mcp: { port: number; close(): Promise<void> };
let everything: { url: string; close(): Promise<void> };
let worker: WorkerProcess;
let browser: Browser;
const pages = new PageTracker(
  () => browser,
  () => worker.url,
);

beforeAll(async () => {
  model = await startModelStub();
  mcp = await startMcpTools();
  everything = await startServerEverything();
  worker = await startWorker(
    {
      E2E_TOKEN,
      MODEL_API_KEY,
      MODEL_BASE_URL: `http://127.0.0.1:${model.port}`,
      ALLOW_PRIVATE_WEBHOOKS: "true",
    },
    "test/e2e/tools-workflows",
  );
  browser = await launchBrowser();
});

afterAll(async () => {
  await browser?.close();
  await worker?.stop();
  await mcp?.close();
  await everything?.close();
  await model?.close();
});

afterEach(async () => {
  expect(await pages.closeAll()).toEqual([]);
});

// biome-ignore lint/suspicious/noExplicitAny: envelopes are checked field by field
type Envelope = any;
const AUTH = { authorization: `Bearer ${E2E_TOKEN}` };

async function startGatedRun(key: string): Promise<string> {
  const script = `SCRIPT=${JSON.stringify([[{ name: "delete-record", arguments: { id: "rec-42" } }], "$results"])}`;
  const res = await fetch(`${worker.url}/invoke/e2e-approval`, {
    method: "POST",
    headers: { "content-type": "application/json", ...AUTH },
    body: JSON.stringify({ script: `${key}\n${script}`, mcp_url: `http://127.0.0.1:${mcp.port}/mcp/${key}` }),
  });
  expect(res.status).toBe(202);
  return ((await res.json()) as { run_id: string }).run_id;
}

async function envelope(runId: string): Promise<Envelope> {
  return (await fetch(`${worker.url}/runs/${runId}`, { headers: AUTH })).json();
}

async function toolCalls(key: string): Promise<unknown[]> {
  const log = (await (await fetch(`http://127.0.0.1:${mcp.port}/__log/${key}`)).json()) as Array<{
    method: string;
  }>;
  return log.filter((l) => l.method === "tools/call");
}

/** Opens the run's page and gives it the workflow's credential through the form. */
async function openRun(runId: string): Promise<Page> {
  const page = await pages.open(`/runs/${runId}/view`);
  await page.locator("#credential-form").waitFor();
  await page.locator("#credential-value").fill(`Bearer ${E2E_TOKEN}`);
  await page.locator('#credential-form button[type="submit"]').click();
  return page;
}

describe("a run waiting for approval", () => {
  it("shows the pending call with its arguments; Approve makes the call and the run completes", async () => {
    const key = `approve-${crypto.randomUUID()}`;
    const runId = await startGatedRun(key);
    const page = await openRun(runId);
    const approval = page.locator('#approvals [data-approval][data-status="pending"]');
    await approval.waitFor({ timeout: 10_000 });
    expect(await page.locator("#approvals").isVisible()).toBe(true);
    await page
      .locator('.node[data-step="clean-up"][data-status="pending_approval"]')
      .waitFor({ timeout: 10_000 });
    expect(await approval.textContent()).toContain("delete-record");
    expect(await approval.locator(".approval-args").textContent()).toContain("rec-42");
    expect(await toolCalls(key)).toEqual([]);

    await approval.locator('button[data-decision="approved"]').click();
    await page.locator('#approvals [data-approval][data-status="approved"]').waitFor();
    await page.locator('#run-status[data-status="complete"]').waitFor({ timeout: 20_000 });
    await page.locator('.node[data-step="clean-up"][data-status="complete"]').waitFor();
    expect(await page.locator('#approvals button[data-decision="approved"]').count()).toBe(0);
    const e = await envelope(runId);
    expect(e.status).toBe("complete");
    expect(e.output).toEqual({ results: ["deleted rec-42"] });
    expect(await toolCalls(key)).toHaveLength(1);
  }, 60_000);

  it("Reject with a comment: the call is never made and the model hears the reviewer", async () => {
    const key = `reject-${crypto.randomUUID()}`;
    const runId = await startGatedRun(key);
    const page = await openRun(runId);
    const approval = page.locator('#approvals [data-approval][data-status="pending"]');
    await approval.waitFor({ timeout: 10_000 });
    await approval.locator(".approval-comment").fill("keep that record");
    await approval.locator('button[data-decision="rejected"]').click();
    const decided = page.locator('#approvals [data-approval][data-status="rejected"]');
    await decided.waitFor();
    expect(await decided.textContent()).toContain("keep that record");
    await page.locator('#run-status[data-status="complete"]').waitFor({ timeout: 20_000 });
    const e = await envelope(runId);
    expect(e.output.results[0]).toContain("A reviewer rejected this call");
    expect(e.output.results[0]).toContain("keep that record");
    expect(e.steps[0].tool_calls[0].approval).toMatchObject({
      status: "rejected",
      comment: "keep that record",
    });
    expect(await toolCalls(key)).toEqual([]);
  }, 60_000);
});

describe("the MCP client in workerd under wrangler dev", () => {
  async function runTools(mcpUrl: string): Promise<Envelope> {
    const script = `SCRIPT=${JSON.stringify([[{ name: "echo", arguments: { message: "from wrangler dev" } }], "$results"])}`;
    const res = await fetch(`${worker.url}/invoke/e2e-tools`, {
      method: "POST",
      headers: { "content-type": "application/json", prefer: "wait=30" },
      body: JSON.stringify({ script: `${crypto.randomUUID()}\n${script}`, mcp_url: mcpUrl }),
    });
    expect(res.status).toBe(200);
    return res.json();
  }

  it("calls server-everything over Streamable HTTP", async () => {
    const e = await runTools(everything.url);
    expect(e.error).toBeNull();
    expect(e.output).toEqual({ results: ["Echo: from wrangler dev"] });
  });

  it("falls back to HTTP+SSE", async () => {
    const e = await runTools(`http://127.0.0.1:${mcp.port}/sse/${crypto.randomUUID()}`);
    expect(e.error).toBeNull();
    expect(e.output).toEqual({ results: ["Echo: from wrangler dev"] });
  });
});

describe("a streaming agent step in the viewer", () => {
  it("shows the answer growing as the model writes it, then the step's output", async () => {
    const prompt = `${"The viewer shows a streaming answer as it is written. ".repeat(3)}CHUNK_MS=40`;
    const res = await fetch(`${worker.url}/invoke/e2e-stream`, {
      method: "POST",
      headers: { "content-type": "application/json", ...AUTH },
      body: JSON.stringify({ prompt }),
    });
    expect(res.status).toBe(202);
    const { run_id: runId } = (await res.json()) as { run_id: string };
    const page = await openRun(runId);
    const live = page.locator('.node[data-step="answer"] > .stream-text');
    await live.waitFor();
    const lengthNow = async () => ((await live.textContent()) ?? "").length;
    await page.waitForFunction(
      () =>
        (document.querySelector('.node[data-step="answer"] > .stream-text')?.textContent ?? "").length > 0,
    );
    const first = await lengthNow();
    // It grows while the step runs, without a reload.
    await page.waitForFunction(
      (n: number) =>
        (document.querySelector('.node[data-step="answer"] > .stream-text')?.textContent ?? "").length > n,
      first,
    );
    expect(prompt.startsWith((await live.textContent()) ?? "x")).toBe(true);
    await page.locator('.node[data-step="answer"][data-status="complete"]').waitFor();
    expect(await live.count()).toBe(0);
  });
});
