/**
 * The run viewer pages as the Worker serves them: static HTML shells with a strict CSP that hold
 * no run data, so they can be served without credentials; the data they draw comes from the JSON
 * API (envelope, graph, events), which keeps the workflow's credentials.
 */
import { describe, expect, it } from "vitest";
import { call, run, TOKEN } from "../worker/harness.ts";

const ITEMS = [
  { name: "marker-item-7f3a", price: 3 },
  { name: "other", price: 1 },
];

function nonceOf(csp: string, directive: string): string | null {
  const m = new RegExp(`${directive} 'nonce-([^']+)'`).exec(csp);
  return m?.[1] ?? null;
}

describe("run viewer page", () => {
  it("is served as HTML with a CSP that allows only its own nonce-tagged script and style", async () => {
    const e = await run("basic", { items: ITEMS });
    const res = await call(`/runs/${e.run_id}/view`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/html; charset=utf-8");
    const csp = res.headers.get("content-security-policy") ?? "";
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("connect-src 'self'");
    expect(csp).not.toContain("unsafe-inline");
    expect(csp).not.toContain("unsafe-eval");
    const nonce = nonceOf(csp, "script-src");
    expect(nonce).toMatch(/^[A-Za-z0-9+/=]{16,}$/);
    expect(nonceOf(csp, "style-src")).toBe(nonce);
    const html = await res.text();
    const scripts = [...html.matchAll(/<script\b([^>]*)>/g)].map((m) => m[1]);
    expect(scripts).toEqual([` nonce="${nonce}"`]);
  });

  it("gets a fresh nonce on every response and is never cached", async () => {
    const e = await run("basic", { items: ITEMS });
    const [a, b] = await Promise.all([call(`/runs/${e.run_id}/view`), call(`/runs/${e.run_id}/view`)]);
    const na = nonceOf(a.headers.get("content-security-policy") ?? "", "script-src");
    const nb = nonceOf(b.headers.get("content-security-policy") ?? "", "script-src");
    expect(na).not.toBe(nb);
    expect(a.headers.get("cache-control")).toBe("no-store");
  });

  it("contains no run data: neither the run id, its params, its step ids nor its output", async () => {
    const e = await run("basic", { items: ITEMS });
    const html = await (await call(`/runs/${e.run_id}/view`)).text();
    expect(html).not.toContain(e.run_id);
    expect(html).not.toContain("marker-item-7f3a");
    expect(html).not.toContain("prepare-items");
    expect(html).not.toContain(e.created_at);
  });

  it("loads nothing from other origins", async () => {
    const e = await run("basic", { items: ITEMS });
    const html = await (await call(`/runs/${e.run_id}/view`)).text();
    expect(html).not.toMatch(/\b(src|href)=["']?(https?:)?\/\//i);
  });

  it("is served without credentials for a run of a workflow that needs them", async () => {
    const e = await run("auth-bearer", {}, { headers: { authorization: `Bearer ${TOKEN}` } });
    const res = await call(`/runs/${e.run_id}/view`);
    expect(res.status).toBe(200);
    expect(await res.text()).not.toContain(TOKEN);
  });

  it("answers 404 problem+json for a path that is not a run id", async () => {
    const res = await call("/runs/not-a-run/view");
    expect(res.status).toBe(404);
    expect(res.headers.get("content-type")).toBe("application/problem+json");
    expect(((await res.json()) as { code: string }).code).toBe("run_not_found");
  });
});

describe("run list page", () => {
  it("is served as HTML with the same strict CSP and no run data", async () => {
    const e = await run("basic", { items: ITEMS });
    const res = await call("/view/runs?workflow=basic");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(res.headers.get("content-security-policy")).toContain("default-src 'none'");
    expect(await res.text()).not.toContain(e.run_id);
  });
});

describe("run graph", () => {
  it("requires the workflow's credentials", async () => {
    const e = await run("auth-bearer", {}, { headers: { authorization: `Bearer ${TOKEN}` } });
    const anonymous = await call(`/runs/${e.run_id}/graph`);
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get("content-type")).toBe("application/problem+json");
    const wrong = await call(`/runs/${e.run_id}/graph`, {
      headers: { authorization: "Bearer wrong-token-123" },
    });
    expect(wrong.status).toBe(401);
    const ok = await call(`/runs/${e.run_id}/graph`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(ok.status).toBe(200);
    expect(((await ok.json()) as { nodes: Array<{ path: string }> }).nodes.map((n) => n.path)).toEqual([
      "hello",
    ]);
  });

  it("lists every step with its dependencies, children nested under their workflow step", async () => {
    const e = await run("parent", { message: "hi" });
    const res = await call(`/runs/${e.run_id}/graph`);
    const graph = (await res.json()) as {
      workflow: string;
      nodes: Array<{ path: string; kind: string; deps: string[]; parent: string | null }>;
    };
    expect(graph.workflow).toBe("parent");
    const byPath = new Map(graph.nodes.map((n) => [n.path, n]));
    expect(byPath.get("notify")).toMatchObject({ kind: "workflow", deps: ["shape"], parent: null });
    expect(byPath.get("notify/post")).toMatchObject({
      kind: "webhook",
      deps: ["notify/format"],
      parent: "notify",
    });
    expect(graph.nodes.map((n) => n.path).indexOf("notify/format")).toBeGreaterThan(
      graph.nodes.map((n) => n.path).indexOf("notify"),
    );
  });
});
