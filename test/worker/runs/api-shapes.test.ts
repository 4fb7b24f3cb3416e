/**
 * Real answers of the API validated against their one source, schema/api.schema.json (which the
 * OpenAPI document references): envelopes of every outcome and of a waiting run, step records
 * of sub-workflows and fan-outs, problems, the run list, the run graph and approvals.
 */

import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { expectShape } from "../../support/api-shapes.ts";
import { poll } from "../../support/poll.ts";
import { call, invoke, run, uniqueKey } from "../harness.ts";
import { AUTH, approvals, loggedServer, script, start, until } from "../tools-support.ts";

const ITEMS = [
  { name: "pen", price: 2 },
  { name: "book", price: 12 },
];

describe("the API's answers match schema/api.schema.json", () => {
  it("a complete run's envelope", async () => {
    expectShape("Envelope", await run("basic", { items: ITEMS }));
  });

  it("a failed run's envelope, with failed, canceled and skipped steps", async () => {
    const e = await run("fail-fast");
    expect(e.status).toBe("failed");
    expectShape("Envelope", e);
  });

  it("a sub-workflow's nested step records and a fan-out's items", async () => {
    const parent = await run("parent", { message: "hi" });
    expectShape("Envelope", parent);
    const fan = await run("fanout-all", {
      key: uniqueKey("shape"),
      items: [{ route: "echo" }, { route: "status/500" }],
    });
    expect(fan.steps.some((s: { steps: unknown[] }) => s.steps.length > 0)).toBe(true);
    expectShape("Envelope", fan);
  });

  it("an accepted invoke, a canceled run and the run's graph", async () => {
    const res = await invoke("deadline");
    expect(res.status).toBe(202);
    const accepted = (await res.json()) as { run_id: string };
    expectShape("RunAccepted", accepted);
    const cancel = await call(`/runs/${accepted.run_id}/cancel`, { method: "POST" });
    expectShape("Envelope", await cancel.json());
    expectShape("RunGraph", await (await call(`/runs/${accepted.run_id}/graph`)).json());
  });

  it("problems: unknown workflow, invalid params with their errors, unknown run", async () => {
    expectShape("Problem", await (await invoke("no-such-workflow")).json());
    const invalid = await invoke("basic", { items: "not a list" });
    expect(invalid.status).toBe(422);
    expectShape("Problem", await invalid.json());
    expectShape("Problem", await (await call(`/runs/${"0".repeat(64)}`)).json());
  });

  it("a re-run: accepted, its envelope with reused steps, and a bulk re-run's answer", async () => {
    const key = uniqueKey("shape-rerun");
    const old = await run("recover-rerun", { key, ship_route: "status/500" });
    const post = (body: unknown, prefer?: string) =>
      call(`/runs/${old.run_id}/rerun`, {
        method: "POST",
        headers: { "content-type": "application/json", ...(prefer ? { prefer } : {}) },
        body: JSON.stringify(body),
      });
    expectShape("RerunAccepted", await (await post({})).json());
    const e = (await (await post({ params: { key, ship_route: "echo" } }, "wait=30")).json()) as {
      steps: Array<{ reused_from: string | null }>;
    };
    expect(e.steps[1]?.reused_from).toBe(old.run_id);
    expectShape("Envelope", e);
    // A bulk re-run of the failed runs since a fresh one: its answer names that run's re-run.
    const failed = await run("recover-rerun", { key: uniqueKey("shape-bulk"), ship_route: "status/500" });
    expect(failed.status).toBe("failed");
    await poll(
      `${failed.run_id} listed as failed`,
      async () =>
        (
          (await (await call("/runs?workflow=recover-rerun&status=failed&limit=100")).json()) as {
            runs: Array<{ run_id: string }>;
          }
        ).runs,
      (runs) => runs.some((r) => r.run_id === failed.run_id),
      { timeoutMs: 12_000 },
    );
    const bulk = await call(`/runs/rerun?workflow=recover-rerun&since=${failed.created_at}`, {
      method: "POST",
    });
    expect(bulk.status).toBe(200);
    const list = (await bulk.json()) as { runs: Array<{ rerun_of: string }> };
    expectShape("RerunList", list);
    expect(list.runs.map((r) => r.rerun_of)).toContain(failed.run_id);
  });

  it("a page of the run list", async () => {
    await run("basic", { items: ITEMS });
    const res = await call("/runs?workflow=basic&limit=5");
    expect(res.status).toBe(200);
    expectShape("RunList", await res.json());
  });

  it("a run waiting for a human: its envelope and its approvals", async () => {
    const server = loggedServer();
    const runId = await start(
      "tools-logged",
      {
        script: script(
          [[{ name: "delete-record", arguments: { id: "r1" } }], "$results"],
          uniqueKey("shape"),
        ),
        mcp_url: server.url,
      },
      AUTH,
    );
    const e = await until(runId, (x) => x.steps[0]?.status === "pending_approval", AUTH);
    expectShape("Envelope", e);
    const list = await approvals(runId, AUTH);
    expectShape("ApprovalList", list.body);
    await call(`/runs/${runId}/cancel`, { method: "POST", headers: AUTH });
  });
});

describe("the front page", () => {
  it("lists every invocable workflow as JSON, with its auth scheme, triggers and run links, and no secret", async () => {
    const res = await call("/", { headers: { accept: "application/json" } });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { workflows: Array<Record<string, unknown>> };
    expectShape("FrontPage", body);
    const basic = body.workflows.find((w) => w.name === "basic");
    expect(basic).toMatchObject({ runs_url: "/runs?workflow=basic", view_url: "/view/runs?workflow=basic" });
    expect(body.workflows.find((w) => w.name === "auth-bearer")?.auth).toBe("bearer");
    expect(body.workflows.find((w) => w.name === "trig-queue")).toMatchObject({
      queue: "fixture-orders",
      email: [],
    });
    expect(body.workflows.find((w) => w.name === "trig-email")).toMatchObject({
      queue: null,
      email: ["support@fixture.example", "*@tickets.fixture.example"],
    });
    const text = JSON.stringify(body);
    // No env value (every secret of the test Worker is one) appears in it.
    for (const value of Object.values(env as unknown as Record<string, unknown>)) {
      if (typeof value === "string" && value.length >= 8) expect(text).not.toContain(value);
    }
    expect(text).not.toContain((env as unknown as Record<string, string>).INVOKE_TOKEN);
  });

  it("answers a browser with an HTML page linking to each workflow's runs", async () => {
    const res = await call("/", { headers: { accept: "text/html" } });
    expect(res.headers.get("content-type")).toContain("text/html");
    const html = await res.text();
    expect(html).toContain('<tr data-workflow="basic">');
    expect(html).toContain('href="/view/runs?workflow=basic"');
    expect(html).toContain("<div>queue fixture-orders</div>");
    expect(html).toContain("<div>email support@fixture.example, *@tickets.fixture.example</div>");
  });
});
