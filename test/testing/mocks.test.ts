/**
 * What a mocked run does, read from the run itself: webhook retries answered from a mock list
 * (same idempotency key and webhook id, valid signatures), a 10-minute deadline on the virtual
 * clock, sub-workflow steps mocked by slash path, agent calls priced under the budget in each
 * provider's format, and masking of what is recorded.
 */
import { describe, expect, it } from "vitest";
import type { Bundle, Json, JsonObject } from "../../src/bundle.ts";
import { compileProject } from "../../src/compiler/index.ts";
import type { TestCase } from "../../src/compiler/test-files/suite.ts";
import { checkExpectations } from "../../src/testing/expectations.ts";
import { keyMatches, mockKeyFor } from "../../src/testing/mocks.ts";
import { type CaseRun, runCase } from "../../src/testing/run-case.ts";
import { verifyStandardWebhook } from "../servers/webhook-target.ts";
import { FIXTURE, runTests } from "./helpers.ts";

const project = compileProject(FIXTURE);
const bundle = project.bundle as Bundle;
const SIGNING = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

function fixtureCase(file: string, name: string): { key: string; tc: TestCase } {
  const suite = project.tests.find((s) => s.file.key === `tests/${file}`);
  const tc = suite?.cases.find((c) => c.name === name);
  if (!suite?.workflowKey || !tc) throw new Error(`no case ${name} in ${file}`);
  return { key: suite.workflowKey, tc };
}

async function run(file: string, name: string, change: Partial<TestCase> = {}): Promise<CaseRun> {
  const { key, tc } = fixtureCase(file, name);
  return runCase(bundle, key, { ...tc, ...change }, "r".repeat(64));
}

function requestsOf(r: CaseRun, path: string): JsonObject[] {
  return (r.log.requests.get(path) ?? []) as JsonObject[];
}

describe("the fixture project", () => {
  it("compiles, and every case passes", async () => {
    expect(project.diagnostics.filter((d) => d.severity === "error")).toEqual([]);
    const { summary, out } = await runTests(FIXTURE);
    expect(summary, out).toMatchObject({ files: 5, cases: 7, passed: 7, failed: 0, errors: 0 });
  });
});

describe("webhook mocks", () => {
  it("answer one attempt each: the step retries with the same keys and fresh valid signatures", async () => {
    const r = await run("signed.test.yaml", "retries through a mock list");
    expect(r.envelope.status).toBe("complete");
    const sent = requestsOf(r, "send");
    expect(sent).toHaveLength(3);
    const headers = sent.map((s) => s.headers as Record<string, string>);
    expect(new Set(headers.map((h) => h["idempotency-key"]))).toEqual(new Set([`${"r".repeat(64)}:send`]));
    expect(new Set(headers.map((h) => h["webhook-id"])).size).toBe(1);
    for (const [i, s] of sent.entries()) {
      const h = headers[i] as Record<string, string>;
      const at = Number(h["webhook-timestamp"]);
      expect(verifyStandardWebhook(SIGNING, h, JSON.stringify(s.body), at)).toEqual({ ok: true });
    }
    // Retry-After (20 s twice) was honoured on the virtual clock: attempts 20 s apart.
    expect(r.virtualMs).toBe(40_000);
    expect(
      headers.map((h) => Number(h["webhook-timestamp"]) - Number(headers[0]?.["webhook-timestamp"])),
    ).toEqual([0, 20, 40]);
    expect(r.records.get("send")?.metrics.attempts).toBe(3);
  });

  it("fail the step with unmocked_step when the list has fewer answers than attempts", async () => {
    const r = await run("signed.test.yaml", "retries through a mock list", {
      mocks: {
        send: { kind: "webhook", tool: null, answers: [{ status: 503 }, { status: 502 }], repeat: false },
      },
    });
    expect(r.log.unmocked).toEqual(["step `send` made attempt 3, but its mock lists 2 answers"]);
    expect(r.envelope.error).toMatchObject({ code: "unmocked_step", step: "send" });
  });

  it("let a 10-minute deadline pass on the virtual clock in well under a second of real time", async () => {
    const started = performance.now();
    const r = await run("signed.test.yaml", "times out after 10 minutes");
    const real = performance.now() - started;
    expect(r.envelope.status).toBe("failed");
    expect(r.envelope.error).toEqual({
      code: "timeout",
      message: "the run reached its deadline (timeout_s = 600)",
      step: "send",
    });
    expect(r.virtualMs).toBe(600_000);
    expect(Date.parse(r.envelope.finished_at ?? "") - Date.parse(r.envelope.created_at)).toBe(600_000);
    expect(r.records.get("send")?.status).toBe("canceled");
    expect(real).toBeLessThan(10_000);
  });

  it("answer steps inside a sub-workflow by slash path, and record requests masked", async () => {
    const r = await run("notify.test.yaml", "posts with the token and delivers through the sub-workflow");
    expect(r.envelope.status).toBe("complete");
    expect(requestsOf(r, "deliver/post")[0]).toMatchObject({
      url: "https://target.example/deliver?key=deliver-post",
      body: { text: "hi" },
    });
    expect(requestsOf(r, "post")[0]?.headers).toMatchObject({ authorization: "Bearer ***" });
    expect(JSON.stringify([r.envelope, [...r.log.requests]])).not.toContain("fixture-token-123");
  });
});

describe("agent mocks", () => {
  it("price the reported usage with the group's pricing and record each model call", async () => {
    const r = await run("agents.test.yaml", "prices each call under the budget");
    expect(r.envelope.status).toBe("complete");
    expect(r.records.get("draft")?.metrics).toMatchObject({ tokens_in: 1000, tokens_out: 100, llm_calls: 1 });
    expect(r.records.get("draft")?.metrics.cost_usd).toBeCloseTo(0.00021, 12);
    expect(r.envelope.totals.cost_usd).toBeCloseTo(0.00066, 12);
    // The Anthropic-format call of core/chat: the prompt as rendered, the step's max_tokens.
    expect(requestsOf(r, "polish")).toEqual([
      {
        params: { prompt: "Polish: Short." },
        model: "claude-haiku",
        system: null,
        messages: [{ role: "user", content: "Polish: Short." }],
        tools: [],
        max_tokens: 100,
      },
    ]);
  });

  it("leave a call whose worst case does not fit unmade: budget_exceeded", async () => {
    const r = await run("agents.test.yaml", "refuses a call whose worst case no longer fits");
    expect(r.envelope.error).toMatchObject({ code: "budget_exceeded", step: "polish" });
    expect(r.envelope.error?.message).toMatch(/^the next LLM call needs up to \$/);
    expect(requestsOf(r, "polish")).toEqual([]);
    expect(r.envelope.totals.cost_usd).toBeCloseTo(0.00075, 12);
  });

  it("repair an invalid reply with the next answer of the list", async () => {
    const r = await run("agents.test.yaml", "prices each call under the budget", {
      mocks: {
        draft: {
          kind: "agent",
          tool: null,
          answers: [{ reply: "no JSON here" }, { output: { summary: "Fixed." } }],
          repeat: false,
        },
        polish: { kind: "agent", tool: null, answers: [{ output: { text: "ok" } }], repeat: true },
      },
      expect: {},
    });
    expect(r.records.get("draft")).toMatchObject({ status: "complete", output: { summary: "Fixed." } });
    const calls = requestsOf(r, "draft");
    expect(calls).toHaveLength(2);
    expect(JSON.stringify(calls[1]?.messages)).toContain("Your reply is invalid");
  });

  it("turn a provider error into retries and then agent_failed", async () => {
    const r = await run("agents.test.yaml", "prices each call under the budget", {
      mocks: { draft: { kind: "agent", tool: null, answers: [{ status: 503 }], repeat: true } },
      expect: {},
    });
    expect(r.envelope.error).toMatchObject({ code: "agent_failed", step: "draft" });
    expect(r.envelope.error?.message).toContain("openai/gpt-4o-mini: HTTP 503");
    expect(requestsOf(r, "draft")).toHaveLength(3);
  });

  it("fail an agent step without a mock before anything is asked", async () => {
    const r = await run("agents.test.yaml", "prices each call under the budget", { mocks: {} });
    expect(r.log.unmocked).toEqual(["agent step `draft` has no mock: add `draft:` under the case's `mocks`"]);
    expect(r.log.requests.size).toBe(0);
  });

  it("answer through the Workers AI binding", async () => {
    const r = await run("edge.test.yaml", "answers through the AI binding");
    expect(r.envelope.output).toEqual({ label: "positive" });
    expect(checkExpectations(fixtureCase("edge.test.yaml", "answers through the AI binding").tc, r)).toEqual(
      [],
    );
  });
});

describe("request headers and invoke.response", () => {
  const name = "reads the recorded header and answers with the rendered response";

  it("give the declared headers to expressions, a missing one as null, and record them", async () => {
    const r = await run("routed.test.yaml", name);
    expect(r.envelope.output).toEqual({ result: { event: "push", other: null } });
    expect(r.envelope.request).toEqual({ headers: { x_event: "push", x_other: null } });
  });

  it("render the invoke's answer as the Worker does, and a failed run's as a 500 problem", async () => {
    expect((await run("routed.test.yaml", name)).response).toEqual({
      status: 201,
      content_type: "application/json",
      body: { event: "push", other: null },
    });
    const failed = await run("routed.test.yaml", name, { requestHeaders: { "X-Event": "boom" } });
    expect(failed.envelope.error?.code).toBe("output_schema_mismatch");
    expect(failed.response).toMatchObject({
      status: 500,
      content_type: "application/problem+json",
      body: { code: "run_failed", run_id: "r".repeat(64), error: { code: "output_schema_mismatch" } },
    });
  });
});

describe("mock keys", () => {
  it("name a step, a step inside a sub-workflow, and fan-out items with or without their index", () => {
    expect(keyMatches("post", "post")).toBe(true);
    expect(keyMatches("notify/post", "notify/post")).toBe(true);
    expect(keyMatches("post", "notify/post")).toBe(false);
    expect(keyMatches("analyze", "analyze/2")).toBe(true);
    expect(keyMatches("analyze/2", "analyze/2")).toBe(true);
    expect(keyMatches("analyze/3", "analyze/2")).toBe(false);
    expect(keyMatches("fan/post", "fan/2/post")).toBe(true);
    expect(keyMatches("fan/2/post", "fan/2/post")).toBe(true);
    expect(keyMatches("fan/2", "fan/2/post")).toBe(false);
    expect(keyMatches("risk/tools/get-sum", "risk/tools/get-sum")).toBe(true);
    expect(keyMatches("risk/tools/get-sum", "risk/4/tools/get-sum")).toBe(true);
  });

  it("pick the most specific key", () => {
    const keys = ["analyze", "analyze/2", "fan/post", "fan/1/post"];
    expect(mockKeyFor(keys, "analyze/2")).toBe("analyze/2");
    expect(mockKeyFor(keys, "analyze/0")).toBe("analyze");
    expect(mockKeyFor(keys, "fan/1/post")).toBe("fan/1/post");
    expect(mockKeyFor(keys, "fan/7/post")).toBe("fan/post");
    expect(mockKeyFor(keys, "other")).toBeNull();
  });
});

describe("expectations", () => {
  it("report each mismatch at the position of the value that differs", async () => {
    const { tc } = fixtureCase("agents.test.yaml", "prices each call under the budget");
    const r = await run("agents.test.yaml", "prices each call under the budget");
    const wrong = {
      ...tc,
      expect: {
        steps: { draft: { metrics: { llm_calls: 2 }, output: { summary: "Long." } } },
      } as Json as JsonObject,
    };
    const failures = checkExpectations(wrong, r);
    expect(failures.map((f) => [f.at, f.message])).toEqual([
      [
        ["cases", 0, "expect", "steps", "draft", "metrics", "llm_calls"],
        "expect.steps.draft.metrics.llm_calls: expected 2, got 1",
      ],
      [
        ["cases", 0, "expect", "steps", "draft", "output", "summary"],
        'expect.steps.draft.output.summary: expected "Long.", got "Short."',
      ],
    ]);
  });
});
