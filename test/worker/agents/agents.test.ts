/**
 * Agent steps end to end: a local agent file and a built-in through the gateway to the model stub,
 * per-step metrics and run totals from usage and pricing, and the hard budget.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { run } from "../harness.ts";

const vars = env as unknown as Record<string, string>;

interface StubCall {
  path: string;
  headers: Record<string, string>;
  body: { model: string; max_tokens: number; messages: Array<{ role: string; content: string }> };
}

async function stubCalls(marker: string): Promise<StubCall[]> {
  const res = await fetch(
    `${vars.MODEL_BASE_URL}/__log?key=${encodeURIComponent(vars.MODEL_API_KEY as string)}`,
  );
  const all = (await res.json()) as StubCall[];
  return all.filter((c) => JSON.stringify(c.body).includes(marker));
}

describe("agent steps", () => {
  it("runs a local agent and a built-in, with metrics from usage and pricing", async () => {
    const marker = crypto.randomUUID();
    const e = await run("agent-basic", { text: `printer on fire ${marker}` });
    expect(e.status).toBe("complete");
    const [summary, chat] = e.steps;
    expect(summary.output).toEqual({
      title: expect.any(String),
      priority: expect.stringMatching(/^(low|high)$/),
    });
    // 1000 tokens in at $1/M + 500 out at $2/M
    expect(summary.metrics).toMatchObject({ tokens_in: 1000, tokens_out: 500, llm_calls: 1 });
    expect(summary.metrics.cost_usd).toBeCloseTo(0.002, 12);
    expect(chat.output).toEqual({ text: expect.stringContaining(`Say hi to ${summary.output.title}`) });
    expect(e.totals).toMatchObject({ tokens_in: 2000, tokens_out: 1000, llm_calls: 2 });
    expect(e.totals.cost_usd).toBeCloseTo(0.004, 12);
    expect(e.budget_usd).toBe(0.5);
  });

  it("sends the provider the key, the model id and max_tokens, and the rendered prompt", async () => {
    const marker = crypto.randomUUID();
    await run("agent-basic", { text: marker });
    const [call] = await stubCalls(marker);
    expect(call?.path).toBe("/chat/completions");
    expect(call?.headers.authorization).toBe(`Bearer ${vars.MODEL_API_KEY}`);
    expect(call?.body.model).toBe("stub-json");
    expect(call?.body.max_tokens).toBe(1000);
    const user = call?.body.messages.find((m) => m.role === "user");
    expect(user?.content).toContain(`Summarize this ticket: ${marker}`);
  });

  it("never shows the provider key in the envelope, even when the provider answers with it", async () => {
    const e = await run("agent-echo-key", {});
    expect(e.status).toBe("complete");
    // The provider's answer held the key (its stub quotes what it was sent); the run recorded ***.
    expect(e.steps[0].output).toEqual({ text: "the key you sent is ***" });
    expect(JSON.stringify(e)).not.toContain(vars.MODEL_API_KEY);
  });
});

describe("budget", () => {
  it("makes no provider call when one call's worst case does not fit", async () => {
    const before = (await stubCalls("tiny budget")).length;
    const e = await run("agent-tiny-budget");
    expect(e.status).toBe("failed");
    expect(e.error).toMatchObject({ code: "budget_exceeded", step: "summary" });
    expect(e.steps[0].metrics.llm_calls).toBe(0);
    expect(await stubCalls("tiny budget")).toHaveLength(before);
    expect(e.totals.cost_usd).toBe(0);
  });

  it("lets five concurrent agent steps under a budget for three make at most three calls", async () => {
    const marker = crypto.randomUUID();
    const e = await run("agent-five", { marker });
    const calls = await stubCalls(marker);
    expect(calls.length).toBeLessThanOrEqual(3);
    expect(e.status).toBe("failed");
    expect(e.error.code).toBe("budget_exceeded");
    expect(e.totals.cost_usd).toBeLessThanOrEqual(e.budget_usd);
    expect(e.totals.llm_calls).toBe(calls.length);
  });
});
