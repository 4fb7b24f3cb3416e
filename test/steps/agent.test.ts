/**
 * The agent step end to end over real HTTP: workerd's fetch against the model stub
 * (test/servers/model-stub.ts) speaking OpenAI and Anthropic. Each test uses its own API key,
 * so the stub's request log (`/__log?key=`) shows exactly that test's calls.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { BUILTIN_AGENTS } from "../../src/agents/builtins.ts";
import type {
  AgentStep,
  Bundle,
  CompiledAgent,
  CompiledGroup,
  CompiledProvider,
  Json,
  JsonSchema,
  Template,
} from "../../src/bundle.ts";
import { createLedger, type Ledger } from "../../src/engine/budget.ts";
import { emptyMetrics, type StepContext, StepError } from "../../src/engine/types.ts";
import { executeAgent } from "../../src/steps/agent.ts";
import { testWorkflow } from "../support/compiled.ts";

const MODEL_BASE_URL = (env as unknown as Record<string, string>).MODEL_BASE_URL;
/** What the stub reports for every reply. */
const USAGE = { input_tokens: 1000, output_tokens: 500 };

interface LoggedRequest {
  path: string;
  headers: Record<string, string>;
  body: {
    model: string;
    max_tokens: number;
    system?: string;
    messages: Array<{ role: string; content: string }>;
    response_format?: { type: string; json_schema?: { schema: unknown } };
  };
}

const ANSWER_SCHEMA: JsonSchema = {
  type: "object",
  required: ["answer"],
  properties: { answer: { type: "string" } },
};

function localAgent(over: Partial<CompiledAgent> = {}): CompiledAgent {
  return {
    key: "agents/answer.agent.yaml",
    name: "answer",
    description: null,
    builtin: null,
    group: null,
    maxTurns: 1,
    paramsSchema: { type: "object", properties: { question: { type: "string" } } },
    system: "You answer questions.",
    user: null,
    outputSchema: ANSWER_SCHEMA,
    ...over,
  };
}

function builtin(name: "chat" | "extract" | "classify"): CompiledAgent {
  const def = BUILTIN_AGENTS.find((a) => a.name === name);
  if (!def) throw new Error(`no built-in ${name}`);
  const { version, ...agent } = def;
  return { ...agent, key: `core/${name}@${version}` };
}

interface Setup {
  /** `provider/model` ids; providers `openai` and `anthropic` point at the stub. */
  models?: string[];
  strategy?: CompiledGroup["strategy"];
  pricing?: CompiledGroup["pricing"];
  defaultMaxTokens?: number;
  agent?: CompiledAgent;
  params?: Json;
  /** Step template for params (overrides `params`). */
  paramsTemplate?: Template;
  stepMaxTokens?: number | null;
  budget?: number | null;
  ledger?: Ledger;
  /** false: the key's env var is unset. */
  withKey?: boolean;
  ai?: StepContext["ai"];
  providerTypes?: Record<string, CompiledProvider["type"]>;
  /** Where the openai provider is (default: the model stub). */
  openaiUrl?: string;
  /** The openai provider entry's `config.max_tokens_field`. */
  maxTokensField?: CompiledProvider["maxTokensField"];
}

let groupSeq = 0;

function setup(s: Setup = {}) {
  const key = `sk-test-${crypto.randomUUID()}`;
  const models = (s.models ?? ["openai/stub-json"]).map((id) => {
    const [provider = "", model = ""] = id.split(/\/(.*)/s);
    return { provider, model };
  });
  const types: Record<string, CompiledProvider["type"]> = {
    openai: "openai",
    anthropic: "anthropic",
    "workers-ai": "workers-ai",
    ...s.providerTypes,
  };
  const providers: CompiledProvider[] = Object.entries(types).map(([name, type]) => ({
    name,
    type,
    baseUrl:
      type === "openai" ? "env:STUB_OPENAI_URL" : type === "anthropic" ? "env:STUB_ANTHROPIC_URL" : null,
    apiKeyEnv: type === "workers-ai" ? null : "STUB_MODEL_KEY",
    ...(type === "openai" && s.maxTokensField ? { maxTokensField: s.maxTokensField } : {}),
  }));
  // A fresh group name per test: round-robin rotation is per group name.
  const group: CompiledGroup = {
    name: `group-${++groupSeq}`,
    models,
    strategy: s.strategy ?? "round_robin",
    defaultMaxTokens: s.defaultMaxTokens ?? 1024,
    pricing: s.pricing ?? {},
  };
  const agent = s.agent ?? localAgent();
  const bundle: Bundle = {
    format: 1,
    hash: "test",
    workflows: {},
    invocable: {},
    agents: { [agent.key]: agent },
    gateway: { env: [{ name: "STUB_MODEL_KEY", secret: true }], providers, groups: [group] },
  };
  const workflow = testWorkflow({
    policy: { costBudgetUsd: s.budget ?? null, timeoutS: 60, timeoutSet: false },
  });
  const step: AgentStep = {
    kind: "agent",
    id: "ask",
    deps: [],
    ancestors: [],
    condition: null,
    agent: agent.key,
    params: s.paramsTemplate ?? { t: "lit", v: s.params ?? { question: "What is six times seven?" } },
    group: null,
    maxTokens: s.stepMaxTokens ?? null,
  };
  const ledger = s.ledger ?? createLedger(s.budget ?? null);
  const ctx = (): StepContext => ({
    bundle,
    runId: "run-agent-test",
    path: "ask",
    workflow,
    scope: { params: { q: "templated question" }, env: {}, step: {} },
    signal: new AbortController().signal,
    deadline: Date.now() + 20_000,
    env: {
      STUB_OPENAI_URL: s.openaiUrl ?? `${MODEL_BASE_URL}/v1`,
      STUB_ANTHROPIC_URL: MODEL_BASE_URL,
      ...(s.withKey === false ? {} : { STUB_MODEL_KEY: key }),
    },
    fetch: (input, init) => fetch(input, init),
    metrics: emptyMetrics(),
    budget: ledger,
    ...(s.ai ? { ai: s.ai } : {}),
  });
  const requests = async (): Promise<LoggedRequest[]> =>
    (await fetch(`${MODEL_BASE_URL}/__log?key=${encodeURIComponent(key)}`)).json();
  return { key, step, ctx, ledger, requests, group };
}

async function failure(p: Promise<unknown>): Promise<StepError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof StepError) return e;
    throw e;
  }
  throw new Error("expected the step to fail");
}

describe("agent step: cost and budget", () => {
  it("records tokens and the cost computed from the group's pricing", async () => {
    const t = setup({ pricing: { "stub-json": { inputPerMillion: 0.15, outputPerMillion: 0.6 } } });
    const ctx = t.ctx();
    await executeAgent(t.step, ctx);
    const expected = (USAGE.input_tokens * 0.15) / 1e6 + (USAGE.output_tokens * 0.6) / 1e6;
    expect(Math.abs(ctx.metrics.cost_usd - expected)).toBeLessThan(1e-12);
    expect(ctx.metrics).toMatchObject({ tokens_in: 1000, tokens_out: 500, llm_calls: 1 });
  });

  it("charges the run's budget with the actual cost, not the reserved worst case", async () => {
    const t = setup({
      budget: 1,
      pricing: { "stub-json": { inputPerMillion: 0.15, outputPerMillion: 0.6 } },
    });
    const ctx = t.ctx();
    await executeAgent(t.step, ctx);
    expect(t.ledger.spentUsd()).toBe(ctx.metrics.cost_usd);
    expect(t.ledger.snapshot().outstanding).toEqual({});
  });

  it("makes no provider call when the budget cannot cover one call's worst case", async () => {
    const t = setup({
      budget: 0.0001,
      pricing: { "stub-json": { inputPerMillion: 0.15, outputPerMillion: 0.6 } },
    });
    const err = await failure(executeAgent(t.step, t.ctx()));
    expect(err.code).toBe("budget_exceeded");
    expect(await t.requests()).toHaveLength(0);
  });

  it("lets at most three of five concurrent agent steps call the model when the budget covers three", async () => {
    // Input is free, so a call's worst case is max_tokens (500) at the output price, which is also
    // what the stub's usage costs: each call spends exactly what it reserved.
    const pricing = { "stub-json": { inputPerMillion: 0, outputPerMillion: 1 } };
    const perCall = 500 / 1e6;
    const ledger = createLedger(perCall * 3.5);
    const t = setup({ pricing, stepMaxTokens: 500, ledger });
    const results = await Promise.allSettled(Array.from({ length: 5 }, () => executeAgent(t.step, t.ctx())));
    expect(await t.requests()).toHaveLength(3);
    const codes = results.map((r) => (r.status === "fulfilled" ? "ok" : (r.reason as StepError).code)).sort();
    expect(codes).toEqual(["budget_exceeded", "budget_exceeded", "ok", "ok", "ok"]);
    expect(ledger.spentUsd()).toBeLessThanOrEqual(perCall * 3.5);
  });

  it("charges the worst case when the provider reports no usage", async () => {
    const pricing = { "stub-no-usage": { inputPerMillion: 0, outputPerMillion: 1 } };
    const t = setup({ models: ["openai/stub-no-usage"], pricing, stepMaxTokens: 200 });
    const ctx = t.ctx();
    await executeAgent(t.step, ctx);
    expect(ctx.metrics.tokens_out).toBe(200);
    expect(ctx.metrics.cost_usd).toBeCloseTo(200 / 1e6, 15);
  });
});

describe("agent step: output", () => {
  it("returns the model's JSON reply when it matches the output schema", async () => {
    const t = setup({ params: { question: 'REPLY={"answer":"42"}' } });
    expect(await executeAgent(t.step, t.ctx())).toEqual({ answer: "42" });
  });

  it("accepts a JSON reply wrapped in a ```json fence", async () => {
    const t = setup({ params: { question: 'REPLY=```json {"answer":"fenced"} ```' } });
    expect(await executeAgent(t.step, t.ctx())).toEqual({ answer: "fenced" });
  });

  it("repairs an invalid JSON reply with one more call that shows the model its reply and the error", async () => {
    const t = setup({
      models: ["openai/stub-bad-json"],
      params: { question: 'REPLY={"answer":"repaired"}' },
    });
    const ctx = t.ctx();
    expect(await executeAgent(t.step, ctx)).toEqual({ answer: "repaired" });
    const calls = await t.requests();
    expect(calls).toHaveLength(2);
    const repairTurns = calls[1]?.body.messages.slice(-2) ?? [];
    expect(repairTurns[0]?.role).toBe("assistant");
    expect(repairTurns[1]).toMatchObject({ role: "user", content: expect.stringContaining("not JSON") });
    expect(ctx.metrics.llm_calls).toBe(2);
  });

  it("sends the repair call to the model that wrote the invalid reply", async () => {
    const t = setup({
      models: ["openai/stub-bad-json:a", "openai/stub-bad-json:b"],
      strategy: "round_robin",
    });
    await executeAgent(t.step, t.ctx());
    expect((await t.requests()).map((r) => r.body.model)).toEqual(["stub-bad-json:a", "stub-bad-json:a"]);
  });

  it("does not make the repair call when the budget cannot cover it", async () => {
    const pricing = { "stub-bad-json": { inputPerMillion: 0, outputPerMillion: 1 } };
    const t = setup({ models: ["openai/stub-bad-json"], pricing, stepMaxTokens: 500, budget: 0.0007 });
    const err = await failure(executeAgent(t.step, t.ctx()));
    expect(err.code).toBe("budget_exceeded");
    expect(await t.requests()).toHaveLength(1);
  });

  it("fails with output_schema_mismatch after exactly two calls when the reply stays invalid", async () => {
    const t = setup({ models: ["openai/stub-always-bad"] });
    const err = await failure(executeAgent(t.step, t.ctx()));
    expect(err.code).toBe("output_schema_mismatch");
    expect(await t.requests()).toHaveLength(2);
  });

  it("names the schema violation in the repair request and in the final error", async () => {
    const t = setup({ params: { question: 'REPLY={"answer":42}' } });
    const err = await failure(executeAgent(t.step, t.ctx()));
    expect(err.code).toBe("output_schema_mismatch");
    expect(err.message).toContain("/answer");
    const calls = await t.requests();
    expect(calls[1]?.body.messages.at(-1)?.content).toContain("/answer");
  });

  it("asks OpenAI for JSON mode, with the schema in the system prompt", async () => {
    const t = setup();
    await executeAgent(t.step, t.ctx());
    const [call] = await t.requests();
    expect(call?.body.response_format).toEqual({ type: "json_object" });
    expect(call?.body.messages[0]).toMatchObject({
      role: "system",
      content: expect.stringContaining('"answer"'),
    });
  });

  it("asks OpenAI for strict structured output when the schema allows it", async () => {
    const schema: JsonSchema = {
      type: "object",
      properties: { answer: { type: "string" } },
      required: ["answer"],
      additionalProperties: false,
    };
    const t = setup({ agent: localAgent({ outputSchema: schema }) });
    expect(await executeAgent(t.step, t.ctx())).toEqual({ answer: "example" });
    const [call] = await t.requests();
    expect(call?.body.response_format).toEqual({
      type: "json_schema",
      json_schema: { name: "output", strict: true, schema },
    });
  });
});

describe("agent step: prompts and params", () => {
  it("sends the params as JSON when the agent has no user prompt", async () => {
    const t = setup({ params: { question: "why?" } });
    await executeAgent(t.step, t.ctx());
    const [call] = await t.requests();
    expect(call?.body.messages.at(-1)).toEqual({
      role: "user",
      content: JSON.stringify({ question: "why?" }),
    });
  });

  it("renders the agent's user prompt from the params", async () => {
    const user: Template = { t: "concat", parts: ["Question: ", { e: "params.question" }] };
    const t = setup({ agent: localAgent({ user }), params: { question: "why?" } });
    await executeAgent(t.step, t.ctx());
    const [call] = await t.requests();
    expect(call?.body.messages.at(-1)?.content).toBe("Question: why?");
  });

  it("substitutes the step's params from the run scope", async () => {
    const paramsTemplate: Template = { t: "obj", entries: [["question", { t: "expr", e: "params.q" }]] };
    const t = setup({ paramsTemplate });
    await executeAgent(t.step, t.ctx());
    const [call] = await t.requests();
    expect(call?.body.messages.at(-1)?.content).toBe(JSON.stringify({ question: "templated question" }));
  });

  it("fails with invalid_input naming the path when params do not match the agent's schema", async () => {
    const t = setup({ params: { question: 7 } });
    const err = await failure(executeAgent(t.step, t.ctx()));
    expect(err.code).toBe("invalid_input");
    expect(err.message).toContain("/question");
    expect(await t.requests()).toHaveLength(0);
  });
});

describe("agent step: providers", () => {
  it("sends the API key, the model id and the step's max_tokens to an OpenAI-compatible provider", async () => {
    const t = setup({ stepMaxTokens: 77 });
    await executeAgent(t.step, t.ctx());
    const [call] = await t.requests();
    expect(call?.path).toBe("/v1/chat/completions");
    expect(call?.headers.authorization).toBe(`Bearer ${t.key}`);
    expect(call?.body).toMatchObject({ model: "stub-json", max_tokens: 77 });
  });

  it("sends max_completion_tokens to an o-series or gpt-5 model of an OpenAI-compatible provider (they refuse max_tokens)", async () => {
    for (const model of ["gpt-5-mini", "o3-mini"]) {
      const t = setup({ models: [`openai/${model}`], stepMaxTokens: 77 });
      const out = await executeAgent(t.step, t.ctx());
      expect(out).toEqual({ answer: "example" });
      const [call] = await t.requests();
      expect(call?.body).toMatchObject({ model, max_completion_tokens: 77 });
      expect(call?.body).not.toHaveProperty("max_tokens");
    }
  });

  it("sends max_tokens to other models of an OpenAI-compatible provider (servers that know only max_tokens)", async () => {
    const t = setup({ models: ["openai/stub-max-tokens-only"], stepMaxTokens: 77 });
    expect(await executeAgent(t.step, t.ctx())).toEqual({ answer: "example" });
    const [call] = await t.requests();
    expect(call?.body).toMatchObject({ max_tokens: 77 });
    expect(call?.body).not.toHaveProperty("max_completion_tokens");
  });

  it("sends the field the provider entry's max_tokens_field names, whatever the model", async () => {
    const t = setup({
      models: ["openai/stub-json"],
      stepMaxTokens: 77,
      maxTokensField: "max_completion_tokens",
    });
    expect(await executeAgent(t.step, t.ctx())).toEqual({ answer: "example" });
    const [call] = await t.requests();
    expect(call?.body).toMatchObject({ max_completion_tokens: 77 });
    expect(call?.body).not.toHaveProperty("max_tokens");

    // Also where the model would refuse it: the entry is followed as written, and the refusal named.
    const legacy = setup({ models: ["openai/o3-mini"], stepMaxTokens: 77, maxTokensField: "max_tokens" });
    const err = await failure(executeAgent(legacy.step, legacy.ctx()));
    expect(err.code).toBe("agent_failed");
    expect(err.message).toContain("HTTP 400 (unsupported_parameter)");
    const [refused] = await legacy.requests();
    expect(refused?.body).toMatchObject({ max_tokens: 77 });
  });

  it("uses the group's default_max_tokens when the step sets none", async () => {
    const t = setup({ defaultMaxTokens: 333 });
    await executeAgent(t.step, t.ctx());
    const [call] = await t.requests();
    expect(call?.body.max_tokens).toBe(333);
  });

  it("calls an Anthropic provider with x-api-key, anthropic-version and a system prompt", async () => {
    const pricing = { "stub-json": { inputPerMillion: 3, outputPerMillion: 15 } };
    const t = setup({
      models: ["anthropic/stub-json"],
      pricing,
      params: { question: 'REPLY={"answer":"yes"}' },
    });
    const ctx = t.ctx();
    expect(await executeAgent(t.step, ctx)).toEqual({ answer: "yes" });
    const [call] = await t.requests();
    expect(call?.path).toBe("/v1/messages");
    expect(call?.headers["x-api-key"]).toBe(t.key);
    expect(call?.headers["anthropic-version"]).toBe("2023-06-01");
    expect(call?.body.system).toContain("You answer questions.");
    expect(ctx.metrics.cost_usd).toBeCloseTo((1000 * 3) / 1e6 + (500 * 15) / 1e6, 12);
  });

  it("retries a 500 and succeeds on the second attempt", async () => {
    const t = setup({ models: ["openai/stub-500-then-ok"], params: { question: 'REPLY={"answer":"ok"}' } });
    const ctx = t.ctx();
    expect(await executeAgent(t.step, ctx)).toEqual({ answer: "ok" });
    expect(await t.requests()).toHaveLength(2);
    expect(ctx.metrics).toMatchObject({ attempts: 2, llm_calls: 1 });
  });

  it("retries a 429 from an Anthropic provider and succeeds", async () => {
    const t = setup({
      models: ["anthropic/stub-429-then-ok"],
      params: { question: 'REPLY={"answer":"later"}' },
    });
    const ctx = t.ctx();
    expect(await executeAgent(t.step, ctx)).toEqual({ answer: "later" });
    expect(ctx.metrics).toMatchObject({ attempts: 2, llm_calls: 1 });
  });

  it("falls back to the group's next model when a provider keeps failing", async () => {
    const t = setup({ models: ["openai/stub-401:a", "openai/stub-json:b"] });
    expect(await executeAgent(t.step, t.ctx())).toEqual({ answer: "example" });
    expect((await t.requests()).map((r) => r.body.model)).toEqual(["stub-401:a", "stub-json:b"]);
  });

  it("fails with agent_failed after trying every model, without quoting the provider's body or the key", async () => {
    const t = setup({ models: ["openai/stub-500:a", "anthropic/stub-401:b"] });
    const err = await failure(executeAgent(t.step, t.ctx()));
    expect(err.code).toBe("agent_failed");
    expect(err.message).toContain("stub-500:a: HTTP 500");
    expect(err.message).toContain("stub-401:b: HTTP 401 (invalid_api_key)");
    expect(err.message).not.toContain(t.key);
    const models = (await t.requests()).map((r) => r.body.model);
    expect(models).toEqual(["stub-500:a", "stub-500:a", "stub-500:a", "stub-401:b"]);
  });

  it("names the provider, the URL it called and why when the model cannot be reached", async () => {
    // Port 1 on the loopback: nothing listens, the connection is refused.
    const t = setup({ models: ["openai/stub-json"], openaiUrl: "http://127.0.0.1:1/v1" });
    const err = await failure(executeAgent(t.step, t.ctx()));
    expect(err.code).toBe("agent_failed");
    expect(err.message).toMatch(
      /^model group group-\d+: every model failed: openai\/stub-json: POST http:\/\/127\.0\.0\.1:1\/v1\/chat\/completions failed after 3 attempts: (the connection failed|the host could not be reached)/,
    );
    expect(err.message).not.toMatch(/reference =/);
  });

  it("fails with agent_failed without calling when the provider's key env var is unset", async () => {
    const t = setup({ withKey: false });
    const ctx = t.ctx();
    const err = await failure(executeAgent(t.step, ctx));
    expect(err.code).toBe("agent_failed");
    expect(err.message).toContain("API key env STUB_MODEL_KEY is not set");
    expect(ctx.metrics.attempts).toBe(0);
  });

  it("fails with agent_failed explaining the missing AI binding for a workers-ai model", async () => {
    const t = setup({ models: ["workers-ai/@cf/meta/llama-3.1-8b-instruct"] });
    const err = await failure(executeAgent(t.step, t.ctx()));
    expect(err.code).toBe("agent_failed");
    expect(err.message).toContain('add [ai] binding = "AI" to wrangler.toml');
  });

  it("calls the AI binding for a workers-ai model and records its usage", async () => {
    const seen: Array<{ model: string; input: { max_tokens: number } }> = [];
    const ai = {
      async run(model: string, input: unknown) {
        seen.push({ model, input: input as { max_tokens: number } });
        return { response: '{"answer":"edge"}', usage: { prompt_tokens: 12, completion_tokens: 3 } };
      },
    };
    const t = setup({ models: ["workers-ai/@cf/meta/llama-3.1-8b-instruct"], ai, stepMaxTokens: 64 });
    const ctx = t.ctx();
    expect(await executeAgent(t.step, ctx)).toEqual({ answer: "edge" });
    expect(seen).toEqual([
      { model: "@cf/meta/llama-3.1-8b-instruct", input: expect.objectContaining({ max_tokens: 64 }) },
    ]);
    expect(ctx.metrics).toMatchObject({ tokens_in: 12, tokens_out: 3 });
  });
});

describe("agent step: deadline and cancel", () => {
  it("fails with timeout when the run deadline passes during the call", async () => {
    const t = setup({ models: ["openai/stub-slow:3000"] });
    const ctx = { ...t.ctx(), deadline: Date.now() + 300 };
    const err = await failure(executeAgent(t.step, ctx));
    expect(err.code).toBe("timeout");
    expect(t.ledger.snapshot().outstanding).toEqual({});
  });

  it("stops with the run's abort reason and releases the call's reservation when the run is canceled", async () => {
    const t = setup({ models: ["openai/stub-slow:3000"], budget: 1 });
    const abort = new AbortController();
    const ctx = { ...t.ctx(), signal: abort.signal };
    const running = executeAgent(t.step, ctx);
    setTimeout(() => abort.abort(new Error("run canceled")), 100);
    await expect(running).rejects.toThrow("run canceled");
    expect(t.ledger.snapshot()).toEqual({ spent: 0, outstanding: {} });
  });
});

describe("agent step: model selection", () => {
  it("round_robin starts each call on the next model of the group", async () => {
    const t = setup({ models: ["openai/stub-json:a", "openai/stub-json:b"], strategy: "round_robin" });
    for (let i = 0; i < 4; i++) await executeAgent(t.step, t.ctx());
    expect((await t.requests()).map((r) => r.body.model)).toEqual([
      "stub-json:a",
      "stub-json:b",
      "stub-json:a",
      "stub-json:b",
    ]);
  });

  it("cost_optimized always calls the cheapest model first", async () => {
    const pricing = {
      "stub-json:pricey": { inputPerMillion: 5, outputPerMillion: 15 },
      "stub-json:cheap": { inputPerMillion: 0.1, outputPerMillion: 0.4 },
    };
    const t = setup({
      models: ["openai/stub-json:pricey", "openai/stub-json:cheap"],
      strategy: "cost_optimized",
      pricing,
    });
    for (let i = 0; i < 2; i++) await executeAgent(t.step, t.ctx());
    expect((await t.requests()).map((r) => r.body.model)).toEqual(["stub-json:cheap", "stub-json:cheap"]);
  });
});

describe("built-in agents", () => {
  it("core/chat returns the reply text as {text} without asking for JSON", async () => {
    const t = setup({
      models: ["openai/stub-echo"],
      agent: builtin("chat"),
      params: { prompt: "Hello there" },
    });
    expect(await executeAgent(t.step, t.ctx())).toEqual({ text: "Hello there" });
    const [call] = await t.requests();
    expect(call?.body.response_format).toBeUndefined();
  });

  it("core/chat sends its optional system param as the system prompt", async () => {
    const t = setup({
      models: ["anthropic/stub-echo"],
      agent: builtin("chat"),
      params: { prompt: "Hi", system: "Be brief." },
    });
    await executeAgent(t.step, t.ctx());
    const [call] = await t.requests();
    expect(call?.body.system).toBe("Be brief.");
  });

  it("core/extract returns an object valid against the schema param", async () => {
    const schema = { type: "object", required: ["name"], properties: { name: { type: "string" } } };
    const t = setup({ agent: builtin("extract"), params: { text: 'REPLY={"name":"Ada"}', schema } });
    expect(await executeAgent(t.step, t.ctx())).toEqual({ name: "Ada" });
  });

  it("core/extract fails with output_schema_mismatch when the reply does not fit the schema param", async () => {
    const schema = { type: "object", required: ["name"], properties: { name: { type: "string" } } };
    const t = setup({ agent: builtin("extract"), params: { text: 'REPLY={"age":3}', schema } });
    const err = await failure(executeAgent(t.step, t.ctx()));
    expect(err.code).toBe("output_schema_mismatch");
  });

  it("core/classify returns {label} when the label is one of the labels", async () => {
    const t = setup({
      agent: builtin("classify"),
      params: { text: 'REPLY={"label":"billing"}', labels: ["billing", "bug"] },
    });
    expect(await executeAgent(t.step, t.ctx())).toEqual({ label: "billing" });
  });

  it("core/classify rejects a label outside the labels after one repair attempt", async () => {
    const t = setup({
      agent: builtin("classify"),
      params: { text: 'REPLY={"label":"spam"}', labels: ["billing", "bug"] },
    });
    const err = await failure(executeAgent(t.step, t.ctx()));
    expect(err.code).toBe("output_schema_mismatch");
    expect(await t.requests()).toHaveLength(2);
  });
});
