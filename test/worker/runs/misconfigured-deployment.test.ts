/**
 * docs/http-api.md, docs/triggers.md under a misconfigured deployment: a secret or a
 * binding the Worker needs is unset or unusable. Every such request fails closed with 500
 * `server_misconfigured` (never lets the request in, never echoes a value), and what does not
 * depend on the missing piece keeps working. The Worker's own entry is called with an env that
 * lacks the piece; everything else is the real one (Durable Objects included).
 */
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { app } from "../../../src/app.ts";
import { call, invoke, TOKEN } from "../harness.ts";

const SECRETS = env as unknown as Record<string, string>;

async function fetchWith(
  overrides: Record<string, unknown>,
  path: string,
  init: RequestInit = {},
): Promise<{ status: number; headers: Headers; text: string }> {
  const patched = { ...env, ...overrides } as Record<string, unknown>;
  for (const [k, v] of Object.entries(overrides)) if (v === undefined) delete patched[k];
  const ctx = createExecutionContext();
  const res = await app.fetch(new Request(`http://workflow.test${path}`, init), patched, ctx);
  const text = await res.text();
  await waitOnExecutionContext(ctx);
  return { status: res.status, headers: res.headers, text };
}

function expectMisconfigured(res: { status: number; headers: Headers; text: string }, ...secrets: string[]) {
  expect(res.status).toBe(500);
  expect(res.headers.get("content-type")).toBe("application/problem+json");
  expect(JSON.parse(res.text)).toMatchObject({ status: 500, code: "server_misconfigured" });
  for (const s of secrets) expect(res.text).not.toContain(s);
  expect(res.text).not.toMatch(/\n\s+at /);
}

async function runOf(name: string, headers: Record<string, string>): Promise<string> {
  const res = await invoke(name, {}, { headers, wait: 10 });
  expect(res.status).toBe(200);
  return ((await res.json()) as { run_id: string }).run_id;
}

describe("an ADMIN_TOKEN shorter than 16 characters", () => {
  const SHORT = "admin-short-1";

  it("refuses protected reads with 500 server_misconfigured, never naming the token", async () => {
    const id = await runOf("auth-bearer", { authorization: `Bearer ${TOKEN}` });
    for (const authorization of [`Bearer ${SHORT}`, `Bearer ${TOKEN}`, ""]) {
      const res = await fetchWith({ ADMIN_TOKEN: SHORT }, `/runs/${id}`, { headers: { authorization } });
      expectMisconfigured(res, SHORT);
    }
    expectMisconfigured(
      await fetchWith({ ADMIN_TOKEN: SHORT }, "/runs?workflow=auth-bearer", {
        headers: { authorization: `Bearer ${SHORT}` },
      }),
      SHORT,
    );
  });

  it("leaves public runs readable and invokes working", async () => {
    const res = await fetchWith({ ADMIN_TOKEN: SHORT }, "/invoke/basic", {
      method: "POST",
      headers: { "content-type": "application/json", prefer: "wait=10" },
      body: JSON.stringify({ items: [] }),
    });
    expect(res.status).toBe(200);
    const { run_id } = JSON.parse(res.text) as { run_id: string };
    expect((await fetchWith({ ADMIN_TOKEN: SHORT }, `/runs/${run_id}`)).status).toBe(200);
    const bearer = await fetchWith({ ADMIN_TOKEN: SHORT }, "/invoke/auth-bearer", {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(bearer.status).toBe(202);
  });
});

describe("an unset invoke secret", () => {
  it("fails reads of the workflow's runs closed, but the ADMIN_TOKEN still reads them", async () => {
    const id = await runOf("auth-bearer", { authorization: `Bearer ${TOKEN}` });
    const without = { INVOKE_TOKEN: undefined };
    expectMisconfigured(
      await fetchWith(without, `/runs/${id}`, { headers: { authorization: `Bearer ${TOKEN}` } }),
      TOKEN,
    );
    expectMisconfigured(await fetchWith(without, `/runs/${id}/cancel`, { method: "POST" }));
    const admin = await fetchWith(without, `/runs/${id}`, {
      headers: { authorization: `Bearer ${SECRETS.ADMIN_TOKEN}` },
    });
    expect(admin.status).toBe(200);
  });
});

describe("an unset signing secret", () => {
  it("fails a signed delivery closed (500 before reading the body), never as 401 or a run", async () => {
    const body = JSON.stringify({ action: "opened" });
    const res = await fetchWith({ GITHUB_SECRET: undefined }, "/invoke/trig-github", {
      method: "POST",
      headers: { "content-type": "application/json", "x-hub-signature-256": `sha256=${"0".repeat(64)}` },
      body,
    });
    expectMisconfigured(res, SECRETS.GITHUB_SECRET as string);
    expect(res.headers.get("location")).toBeNull();
  });

  it("fails reads of the workflow's runs closed", async () => {
    const res = await fetchWith({ GITHUB_SECRET: undefined }, "/runs?workflow=trig-github", {
      headers: { authorization: `Bearer ${SECRETS.GITHUB_SECRET}` },
    });
    expectMisconfigured(res, SECRETS.GITHUB_SECRET as string);
  });
});

describe("the OpenAPI document", () => {
  it("describes the 500 that a misconfigured read of the listing answers", async () => {
    const doc = (await (await call("/openapi.json")).json()) as {
      paths: Record<string, Record<string, { responses: Record<string, unknown> }>>;
    };
    for (const [path, method] of [
      ["/runs", "get"],
      ["/runs/{run_id}", "get"],
      ["/runs/{run_id}/cancel", "post"],
    ] as const) {
      expect(doc.paths[path]?.[method]?.responses, `${method} ${path}`).toHaveProperty("500");
    }
  });
});

describe("a rate limit binding missing at run time", () => {
  it("is 500 server_misconfigured and creates no run", async () => {
    const tenant = crypto.randomUUID();
    const res = await fetchWith({ TEST_RATE_LIMIT: undefined }, "/invoke/trig-rate-limit", {
      method: "POST",
      headers: { "content-type": "application/json", "x-tenant": tenant },
      body: "{}",
    });
    expectMisconfigured(res);
    expect(res.headers.get("location")).toBeNull();
    // The real deployment is unaffected: this tenant's bucket is still full.
    const ok = await call("/invoke/trig-rate-limit", {
      method: "POST",
      headers: { "content-type": "application/json", "x-tenant": tenant },
      body: "{}",
    });
    expect(ok.status).toBe(202);
  });
});
