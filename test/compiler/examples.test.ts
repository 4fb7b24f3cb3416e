/**
 * The example workflows in workflows/ are what newcomers run first: they must build cleanly,
 * `hello` must need no secrets and no model provider, and .dev.vars.example must list every env
 * var they read.
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { isFanOut } from "../../src/bundle.ts";
import { compileProject } from "../../src/compiler/index.ts";

const root = fileURLToPath(new URL("../..", import.meta.url));
const result = compileProject(`${root}workflows`);
const bundle = result.bundle;

describe("workflows/ examples", () => {
  it("compile with no errors", () => {
    expect(result.diagnostics.filter((d) => d.severity === "error").map((d) => d.text)).toEqual([]);
  });

  it("are invocable by name", () => {
    expect(Object.keys(bundle?.invocable ?? {})).toEqual([
      "account-cleanup",
      "feedback-digest",
      "github-events",
      "hello",
      "nightly-digest",
      "order-events",
      "order-fulfilment",
      "order-saga",
      "refund-request",
      "repo-reindex",
      "slack-app",
      "standup-reminder",
      "stock-updates",
      "support-triage",
      "tenant-events",
    ]);
  });

  it("include an agent with an MCP tool server and an approval-gated tool", () => {
    const agent = bundle?.agents["agents/account-janitor.agent.yaml"];
    const ref = agent?.servers?.[0];
    expect(ref?.server.key).toBe("servers/accounts.server.yaml");
    expect(ref?.allow?.find((e) => e.pattern === "disable-account")?.approval).toMatchObject({
      onReject: "recover",
      timeoutS: 4 * 3600,
      timeoutBehavior: "reject",
    });
    expect(agent?.secretParams).toEqual(["mcp_token"]);
  });

  it("include a hello workflow that needs no secret, no auth and no model", () => {
    const hello = bundle?.workflows["hello.workflow.yaml"];
    expect(hello?.env).toEqual([]);
    expect(hello?.auth).toBeNull();
    expect(hello?.steps.every((s) => s.kind === "transform")).toBe(true);
    expect(hello?.paramsSchema).toMatchObject({ required: ["name"] });
  });

  it("use all four step types in support-triage", () => {
    const kinds = bundle?.workflows["support-triage.workflow.yaml"]?.steps.map((s) => s.kind);
    expect(new Set(kinds)).toEqual(new Set(["agent", "workflow", "transform", "webhook"]));
  });

  it("include a run that recovers: a retry policy, a continue-on-error branch and a failure notification", () => {
    const wf = bundle?.workflows["order-fulfilment.workflow.yaml"];
    const charge = wf?.steps.find((s) => s.id === "charge");
    expect(charge?.kind === "webhook" && charge.retry?.maxAttempts).toBe(5);
    expect(wf?.steps.find((s) => s.id === "receipt")?.onError).toBe("continue");
    expect(wf?.notify?.[0]).toMatchObject({ on: ["failed"], sign: { secretEnv: "ALERTS_SIGNING_SECRET" } });
  });

  it("include a saga that waits: a keyed signal, a sleep and per-customer concurrency", () => {
    const wf = bundle?.workflows["order-saga.workflow.yaml"];
    const payment = wf?.steps.find((s) => s.id === "payment");
    expect(payment?.kind === "wait" && payment.signal?.name).toBe("payment_received");
    expect(payment?.kind === "wait" && payment.signal?.key).toEqual({ t: "expr", e: "params.order_id" });
    expect(wf?.steps.find((s) => s.id === "cool-down")).toMatchObject({ kind: "wait", forS: 10 });
    expect(wf?.invoke.concurrency).toMatchObject({ limit: 1 });
  });

  it("shape bursts: pushes debounced per repository, events batched per tenant", () => {
    const reindex = bundle?.workflows["repo-reindex.workflow.yaml"]?.invoke;
    expect(reindex?.debounce).toMatchObject({ periodMs: 30_000, maxWaitMs: 300_000 });
    expect(reindex?.concurrency).toMatchObject({ limit: 1 });
    expect(bundle?.workflows["tenant-events.workflow.yaml"]?.invoke.batch).toMatchObject({
      maxItems: 100,
      maxWaitMs: 10_000,
    });
  });

  it("serve hello both as a model and as an MCP tool, and refund-request as an A2A agent that waits for approval", () => {
    const wf = (name: string) => bundle?.workflows[bundle.invocable[name] as string];
    expect(wf("hello")?.chat?.reply).toEqual({ t: "expr", e: "output.result.greeting" });
    expect(wf("hello")?.mcp?.title).toBe("Say hello");
    const refund = wf("refund-request");
    expect(refund?.a2a?.skill.name).toBe("Refund requests");
    expect(refund?.steps[0]).toMatchObject({ kind: "wait", signal: { name: "approval" } });
  });

  it("fan out and back in in order-events", () => {
    const steps = bundle?.workflows["order-events.workflow.yaml"]?.steps ?? [];
    expect(steps.map((s) => [s.id, s.deps])).toEqual([
      ["summarize", []],
      ["notify-warehouse", ["summarize"]],
      ["notify-billing", ["summarize"]],
      ["report", ["notify-warehouse", "notify-billing"]],
    ]);
  });

  it("fan an agent out under a budget and a webhook out to several URLs in feedback-digest", () => {
    const wf = bundle?.workflows["feedback-digest.workflow.yaml"];
    expect(wf?.policy.costBudgetUsd).toBeGreaterThan(0);
    const fanOuts = (wf?.steps ?? []).flatMap((s) => (isFanOut(s) ? [[s.id, s.kind]] : []));
    expect(fanOuts).toEqual([
      ["classify", "agent"],
      ["notify", "webhook"],
    ]);
  });

  it("have every env var they read listed in .dev.vars.example, secrets of at least 8 characters", () => {
    const vars = new Map(
      readFileSync(`${root}.dev.vars.example`, "utf8")
        .split("\n")
        .filter((l) => /^[A-Z_][A-Z0-9_]*=/.test(l))
        .map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1)] as const),
    );
    const decls = [
      ...Object.values(bundle?.workflows ?? {}).flatMap((w) => w.env),
      ...(bundle?.gateway.env ?? []),
    ];
    expect(decls.length).toBeGreaterThan(0);
    for (const d of decls) {
      expect(vars.has(d.name), `${d.name} missing from .dev.vars.example`).toBe(true);
      if (d.secret) expect((vars.get(d.name) ?? "").length, d.name).toBeGreaterThanOrEqual(8);
    }
    expect(vars.get("ALLOW_PRIVATE_WEBHOOKS")).toBe("true");
  });
});
