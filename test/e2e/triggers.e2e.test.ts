/**
 * The trigger examples of workflows/ under `wrangler dev` with the project's wrangler.toml (its
 * cron trigger and rate limit binding), over real HTTP: a GitHub delivery signed by GitHub's own
 * library, the Slack handshake and slash command, the nightly schedule fired through wrangler's
 * /cdn-cgi/local/scheduled, support-triage started by mail through /cdn-cgi/local/email, a JSON
 * body sent without any content type, and the viewer showing
 * the request headers a run recorded.
 */
import { createHmac } from "node:crypto";
import { sign } from "@octokit/webhooks-methods";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startWebhookTarget } from "../servers/webhook-target.ts";
import { type Browser, launchBrowser } from "./browser.ts";
import { startWorker, type WorkerProcess } from "./worker-process.ts";

const GITHUB_SECRET = "e2e-github-webhook-secret";
const SLACK_SECRET = "e2e-slack-signing-secret";
const ADMIN_TOKEN = "e2e-admin-token-0123456789";

let target: { port: number; close(): Promise<void> };
let worker: WorkerProcess;
let browser: Browser;
let chatKey: string;

beforeAll(async () => {
  target = await startWebhookTarget();
  chatKey = `chat-${crypto.randomUUID()}`;
  worker = await startWorker(
    {
      ALLOW_PRIVATE_WEBHOOKS: "true",
      CHAT_WEBHOOK_URL: `http://127.0.0.1:${target.port}/echo?key=${chatKey}`,
      GITHUB_WEBHOOK_SECRET: GITHUB_SECRET,
      SLACK_SIGNING_SECRET: SLACK_SECRET,
      DIGEST_TOKEN: "e2e-digest-token-123",
      ADMIN_TOKEN,
      SUPPORT_API_TOKEN: "e2e-support-token-123",
      HELPDESK_URL: `http://127.0.0.1:${target.port}/echo?key=${chatKey}-helpdesk`,
      HELPDESK_TOKEN: "e2e-helpdesk-token-123",
      PAGER_URL: `http://127.0.0.1:${target.port}/echo?key=${chatKey}-pager`,
    },
    "workflows",
  );
  browser = await launchBrowser();
});

afterAll(async () => {
  await browser?.close();
  await worker?.stop();
  await target?.close();
});

async function chatPosts(): Promise<Array<{ text: string }>> {
  const res = await fetch(`http://127.0.0.1:${target.port}/log?key=${chatKey}`);
  return ((await res.json()) as Array<{ body: string }>).map((r) => JSON.parse(r.body) as { text: string });
}

async function github(event: string, payload: object, delivery = crypto.randomUUID()): Promise<Response> {
  const body = JSON.stringify(payload);
  return fetch(`${worker.url}/invoke/github-events`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "x-github-event": event,
      "x-github-delivery": delivery,
      "x-hub-signature-256": await sign(GITHUB_SECRET, body),
    },
    body,
  });
}

function slack(body: string, contentType: string): Promise<Response> {
  const ts = Math.floor(Date.now() / 1000);
  const signature = `v0=${createHmac("sha256", SLACK_SECRET).update(`v0:${ts}:${body}`).digest("hex")}`;
  return fetch(`${worker.url}/invoke/slack-app`, {
    method: "POST",
    headers: {
      "content-type": contentType,
      "x-slack-request-timestamp": String(ts),
      "x-slack-signature": signature,
    },
    body,
  });
}

describe("GitHub receiver example", () => {
  const push = {
    ref: "refs/heads/main",
    commits: [{ id: "a" }, { id: "b" }],
    repository: { full_name: "acme/api" },
  };

  it("routes a signed push on X-GitHub-Event, answers its summary, posts to chat", async () => {
    const res = await github("push", push);
    expect(res.status, worker.output()).toBe(200);
    expect(await res.json()).toMatchObject({
      event: "push",
      push: { repo: "acme/api", ref: "refs/heads/main", commits: 2 },
    });
    await expect
      .poll(async () => (await chatPosts()).map((p) => p.text))
      .toContain("GitHub push on acme/api");
  });

  it("answers GitHub's ping and refuses an unsigned delivery", async () => {
    const ping = await github("ping", { zen: "Keep it logically awesome." });
    expect(await ping.json()).toMatchObject({ event: "ping", zen: "Keep it logically awesome." });
    const unsigned = await fetch(`${worker.url}/invoke/github-events`, { method: "POST", body: "{}" });
    expect(unsigned.status).toBe(401);
  });

  it("answers a redelivery from the same run", async () => {
    const delivery = crypto.randomUUID();
    const a = await github("push", push, delivery);
    const b = await github("push", push, delivery);
    expect(b.headers.get("location")).toBe(a.headers.get("location"));
  });

  it("shows the recorded request headers in the viewer", async () => {
    const res = await github("push", push);
    const location = res.headers.get("location") as string;
    const page: Page = await browser.context.newPage();
    try {
      await page.goto(`${worker.url}${location}/view`);
      await page.locator("#credential-value").fill(`Bearer ${ADMIN_TOKEN}`);
      await page.locator('#credential-form button[type="submit"]').click();
      await expect.poll(() => page.locator("#run-status").getAttribute("data-status")).toBe("complete");
      await expect.poll(() => page.locator("#details-request").isVisible()).toBe(true);
      const shown = JSON.parse((await page.locator("#details-request").textContent()) ?? "null");
      expect(shown).toEqual({ x_github_event: "push" });
    } finally {
      await page.close();
    }
  });
});

describe("Slack app example", () => {
  it("answers the url_verification handshake with its challenge", async () => {
    const body = JSON.stringify({
      token: "t",
      challenge: "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P",
      type: "url_verification",
    });
    const res = await slack(body, "application/json");
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ challenge: "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P" });
  });

  it("answers a /deploy slash command (a form) with an ephemeral message", async () => {
    const form = new URLSearchParams({ command: "/deploy", text: "api", user_name: "ada", team_id: "T1" });
    const res = await slack(form.toString(), "application/x-www-form-urlencoded");
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ response_type: "ephemeral", text: "Deploying api for ada…" });
  });
});

describe("nightly-digest example", () => {
  it("runs once per scheduled time when wrangler fires its cron", async () => {
    const time = Date.UTC(2031, 4, 5, 6, 0, 0);
    const fire = () =>
      fetch(`${worker.url}/cdn-cgi/local/scheduled?cron=${encodeURIComponent("0 6 * * *")}&time=${time}`);
    expect((await fire()).status).toBe(200);
    const digests = async () => (await chatPosts()).filter((p) => p.text.startsWith("Daily digest"));
    await expect.poll(async () => (await digests()).length, { timeout: 15_000 }).toBe(1);
    expect((await digests())[0]?.text).toBe("Daily digest (24 h):\n• deploys\n• incidents\n• signups");
    await fire();
    await new Promise((r) => setTimeout(r, 1500));
    expect((await digests()).length).toBe(1);
  });
});

describe("support-triage example by mail (wrangler's local email endpoint)", () => {
  const mail = (id: string) =>
    [
      "From: Ada <ada@customer.example>",
      "To: support@example.com",
      "Subject: =?UTF-8?Q?Export_=C3=A9chou=C3=A9?=",
      `Message-ID: ${id}`,
      "Date: Sat, 28 Nov 2026 09:00:00 +0000",
      "",
      "The CSV export fails.",
      "",
    ].join("\r\n");
  const send = (to: string, raw: string) =>
    fetch(`${worker.url}/cdn-cgi/local/email?from=ada@customer.example&to=${encodeURIComponent(to)}`, {
      method: "POST",
      body: raw,
    });

  it("starts a run from a mail to support@, once however often it is sent", async () => {
    const id = `<e2e-${crypto.randomUUID()}@customer.example>`;
    const res = await send("support@example.com", mail(id));
    expect(await res.text()).toBe("Worker successfully processed email");
    expect(res.status).toBe(200);
    await send("support@example.com", mail(id));
    const runs = async () => {
      const list = (await (
        await fetch(`${worker.url}/runs?workflow=support-triage`, {
          headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
        })
      ).json()) as { runs: Array<{ run_id: string }> };
      const envelopes = await Promise.all(
        list.runs.map(
          async (r) =>
            (await (
              await fetch(`${worker.url}/runs/${r.run_id}`, {
                headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
              })
            ).json()) as { params: { message_id?: string; subject?: string } },
        ),
      );
      return envelopes.filter((e) => e.params.message_id === id);
    };
    await expect.poll(async () => (await runs()).length, { timeout: 15_000 }).toBe(1);
    expect((await runs())[0]?.params.subject).toBe("Export échoué");
  });

  it("bounces mail to an address no workflow takes, with its code", async () => {
    const res = await send("nobody@example.com", mail(`<e2e-${crypto.randomUUID()}@customer.example>`));
    expect(res.status).toBe(400);
    expect(await res.text()).toBe(
      "Worker rejected email with the following reason: no_workflow: no workflow takes mail to nobody@example.com",
    );
  });
});

describe("bodies over real HTTP", () => {
  it("reads a JSON body sent without any content type", async () => {
    const res = await fetch(`${worker.url}/invoke/hello`, {
      method: "POST",
      headers: { prefer: "wait=10" },
      body: new TextEncoder().encode(JSON.stringify({ name: "Ada" })),
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { params: unknown }).params).toEqual({ name: "Ada" });
  });
});
