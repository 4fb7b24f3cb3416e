/**
 * Build checks that involve agents and workflows/gateway.yaml: agent references (built-in and
 * local), model groups, pricing under a budget, static system prompts, gateway cross references.
 */
import { afterAll, describe, expect, it } from "vitest";
import {
  compileFiles,
  expectDiagnostic,
  expectOnlyError,
  GATEWAY,
  HEAD,
  removeProjects,
} from "./temp-project.ts";

afterAll(removeProjects);

const T = "t.workflow.yaml";
const BUDGET = "model_policy: {cost_budget_usd: 0.5}\n";
/** An agent step on line 10-12 (`agent:` value at 11:12). */
const agentStep = (ref: string, extra = "") =>
  `${HEAD}  - id: ask\n    agent: ${ref}\n    params: {prompt: hi}\n${extra}${BUDGET}`;

describe("built-in agents", () => {
  it("resolves core/chat@1 to the newest 1.x and bundles it under its exact version", () => {
    const p = compileFiles({ "gateway.yaml": GATEWAY, [T]: agentStep("core/chat@1") });
    expect(p.errors).toEqual([]);
    const s = p.result.bundle?.workflows[T]?.steps[0];
    expect(s?.kind === "agent" && s.agent).toBe("core/chat@1.0.0");
    expect(p.result.bundle?.agents["core/chat@1.0.0"]?.builtin).toBe("chat");
  });

  it("rejects a built-in name that does not exist, with a hint", () => {
    const p = compileFiles({ "gateway.yaml": GATEWAY, [T]: agentStep("core/clasify@1.0.0") });
    expectOnlyError(p, T, 11, 12, /^unknown built-in agent `core\/clasify`; did you mean `core\/classify`\?/);
  });

  it("rejects a version no built-in has", () => {
    const p = compileFiles({ "gateway.yaml": GATEWAY, [T]: agentStep("core/chat@2") });
    expectOnlyError(p, T, 11, 12, /^no version of `core\/chat` matches `@2` \(available: 1\.0\.0\)$/);
  });

  it("rejects ktsu's documentation examples such as ktsu/parser@1.0.0 with a hint", () => {
    const p = compileFiles({ "gateway.yaml": GATEWAY, [T]: agentStep("ktsu/parser@1.0.0") });
    expectOnlyError(
      p,
      T,
      11,
      12,
      /only the `core` namespace exists .*ktsu's documentation examples \(such as `ktsu\/parser@1\.0\.0`\) never shipped/,
    );
  });
});

describe("local agents", () => {
  const agentFile = `name: helper
model: economy
params:
  schema: {type: object}
prompt:
  system: "You help."
  user: "{{ params.prompt }}"
output:
  schema: {type: object, properties: {answer: {type: string}}}
`;

  it("rejects an agent path that does not exist", () => {
    const p = compileFiles({ "gateway.yaml": GATEWAY, [T]: agentStep("agents/nope.agent.yaml") });
    expectOnlyError(
      p,
      T,
      11,
      12,
      /^agent file `agents\/nope\.agent\.yaml` not found \(relative to this file\)/,
    );
  });

  it("bundles a local agent under its path relative to workflows/", () => {
    const p = compileFiles({
      "gateway.yaml": GATEWAY,
      "agents/helper.agent.yaml": agentFile,
      [T]: agentStep("agents/helper.agent.yaml"),
    });
    expect(p.errors).toEqual([]);
    const a = p.result.bundle?.agents["agents/helper.agent.yaml"];
    expect(a).toMatchObject({
      name: "helper",
      group: "economy",
      builtin: null,
      system: "You help.",
      user: { t: "expr", e: "params.prompt" },
    });
  });

  it("rejects {{ }} in an agent's prompt.system", () => {
    const p = compileFiles({
      "gateway.yaml": GATEWAY,
      "agents/helper.agent.yaml": agentFile.replace(
        'system: "You help."',
        'system: "You help {{ params.who }}."',
      ),
      [T]: agentStep("agents/helper.agent.yaml"),
    });
    expectOnlyError(
      p,
      "agents/helper.agent.yaml",
      6,
      11,
      /^`prompt\.system` must be static: `\{\{ \}\}` is only allowed in `prompt\.user`$/,
    );
  });

  it("rejects an unknown model group named by an agent file", () => {
    const p = compileFiles({
      "gateway.yaml": GATEWAY,
      "agents/helper.agent.yaml": agentFile.replace("model: economy", "model: econom"),
      [T]: agentStep("agents/helper.agent.yaml"),
    });
    expectOnlyError(
      p,
      "agents/helper.agent.yaml",
      2,
      8,
      /^unknown model group `econom`; did you mean `economy`\?/,
    );
  });

  it("rejects an unknown field in an agent file", () => {
    const p = compileFiles({
      "gateway.yaml": GATEWAY,
      "agents/helper.agent.yaml": `${agentFile}max_turn: 2\n`,
      [T]: agentStep("agents/helper.agent.yaml"),
    });
    expectOnlyError(
      p,
      "agents/helper.agent.yaml",
      10,
      1,
      /^unknown field `max_turn`; did you mean `max_turns`\?$/,
    );
  });

  it("warns about a field the agent's output.schema does not have", () => {
    const p = compileFiles({
      "gateway.yaml": GATEWAY,
      "agents/helper.agent.yaml": agentFile,
      [T]: agentStep(
        "agents/helper.agent.yaml",
        `  - id: next\n    condition: "step.ask.answr"\n    transform: {ops: []}\n`,
      ),
    });
    expectDiagnostic(
      p,
      "warning",
      T,
      14,
      16,
      /^`step\.ask\.answr` is always null: .* has no field `answr` here \(known: `answer`\)$/,
    );
  });
});

describe("what a step passes to what it calls", () => {
  it("rejects agent params that lack a param the agent requires", () => {
    const p = compileFiles({
      "gateway.yaml": GATEWAY,
      [T]: agentStep("core/chat@1.0.0").replace("params: {prompt: hi}", "params: {promt: hi}"),
    });
    expectOnlyError(
      p,
      T,
      12,
      5,
      /^step `ask`: agent `core\/chat@1\.0\.0` requires param `prompt`, which `params` does not give$/,
    );
  });

  it("rejects sub-workflow input that lacks a required param or names an unknown one", () => {
    const child = `kind: workflow\nname: child\nparams:\n  schema: {type: object, required: [x], additionalProperties: false, properties: {x: {type: string}}}\npipeline:\n  - id: s\n    transform: {ops: []}\n`;
    const p = compileFiles({
      "child.yaml": child,
      [T]: `${HEAD}  - id: run\n    workflow: child.yaml\n    input: {y: "{{ params.y }}"}\n`,
    });
    expectDiagnostic(
      p,
      "error",
      T,
      12,
      5,
      /^step `run`: sub-workflow `child\.yaml` requires input `x`, which `input` does not give$/,
    );
    expectDiagnostic(
      p,
      "error",
      T,
      12,
      13,
      /^step `run`: sub-workflow `child\.yaml` does not take input `y`; did you mean `x`\?$/,
    );
    expect(p.errors).toHaveLength(2);
  });
});

describe("models and budget", () => {
  it("rejects an unknown model group on a step", () => {
    const p = compileFiles({
      "gateway.yaml": GATEWAY,
      [T]: agentStep("core/chat@1.0.0", "    model: {group: premium}\n"),
    });
    expectOnlyError(p, T, 13, 20, /^step `ask`: unknown model group `premium`/);
  });

  it("rejects model.max_tokens outside 1..200000", () => {
    const p = compileFiles({
      "gateway.yaml": GATEWAY,
      [T]: agentStep("core/chat@1.0.0", "    model: {max_tokens: 500000}\n"),
    });
    expectOnlyError(
      p,
      T,
      13,
      25,
      /^step `ask`: `model\.max_tokens` must be an integer in 1\.\.200000, got 500000$/,
    );
  });

  it("rejects a non-integer model.max_tokens", () => {
    const p = compileFiles({
      "gateway.yaml": GATEWAY,
      [T]: agentStep("core/chat@1.0.0", "    model: {max_tokens: 10.5}\n"),
    });
    expectOnlyError(
      p,
      T,
      13,
      25,
      /^step `ask`: `model\.max_tokens` must be an integer in 1\.\.200000, got a number \(10\.5\)$/,
    );
  });

  it("rejects a group without pricing in a workflow with cost_budget_usd", () => {
    const p = compileFiles({
      "gateway.yaml": GATEWAY,
      [T]: agentStep("core/chat@1.0.0", "    model: {group: free}\n"),
    });
    expectOnlyError(
      p,
      T,
      13,
      20,
      /^step `ask`: model group `free` has no pricing for `openai\/gpt-4o-mini`, so `cost_budget_usd` cannot be enforced/,
    );
  });

  it("rejects an agent step when there is no gateway.yaml", () => {
    const p = compileFiles({ [T]: agentStep("core/chat@1.0.0") });
    expectOnlyError(
      p,
      T,
      11,
      12,
      /^step `ask`: agent steps need workflows\/gateway\.yaml with at least one model group$/,
    );
  });

  it("warns about an agent step in a workflow without cost_budget_usd", () => {
    const p = compileFiles({
      "gateway.yaml": GATEWAY,
      [T]: agentStep("core/chat@1.0.0").replace(BUDGET, ""),
    });
    expectDiagnostic(
      p,
      "warning",
      T,
      11,
      12,
      /^step `ask` calls an LLM but workflow `t` has no `model_policy\.cost_budget_usd`: its spend is not capped$/,
    );
    expect(p.errors).toEqual([]);
  });

  it("lets a sub-workflow's agent step use the parent's budget (no warning, pricing required)", () => {
    const child = `kind: workflow\nname: child\nparams: {schema: {type: object}}\npipeline:\n  - id: ask\n    agent: core/chat@1.0.0\n    model: {group: free}\n    params: {prompt: hi}\n`;
    const p = compileFiles({
      "gateway.yaml": GATEWAY,
      "child.yaml": child,
      [T]: `${HEAD}  - id: a\n    workflow: child.yaml\n${BUDGET}`,
    });
    expectOnlyError(p, "child.yaml", 7, 20, /^step `ask`: model group `free` has no pricing/);
    expect(p.warnings.filter((w) => w.message.includes("calls an LLM"))).toEqual([]);
  });
});

describe("gateway.yaml", () => {
  it("compiles providers and groups with their defaults", () => {
    const p = compileFiles({ "gateway.yaml": GATEWAY, [T]: `${HEAD}  - id: a\n    transform: {ops: []}\n` });
    expect(p.errors).toEqual([]);
    expect(p.result.bundle?.gateway).toEqual({
      env: [{ name: "OPENAI_API_KEY", secret: true }],
      providers: [
        { name: "openai", type: "openai", baseUrl: "https://api.openai.com/v1", apiKeyEnv: "OPENAI_API_KEY" },
      ],
      groups: [
        {
          name: "economy",
          models: [{ provider: "openai", model: "gpt-4o-mini" }],
          strategy: "round_robin",
          defaultMaxTokens: 1024,
          pricing: { "gpt-4o-mini": { inputPerMillion: 0.15, outputPerMillion: 0.6 } },
        },
        {
          name: "free",
          models: [{ provider: "openai", model: "gpt-4o-mini" }],
          strategy: "round_robin",
          defaultMaxTokens: 1024,
          pricing: {},
        },
      ],
    });
  });

  it("stores a base_url of exactly {{ env.X }} as env:X", () => {
    const gw = GATEWAY.replace(
      '    config: {api_key: "{{ env.OPENAI_API_KEY }}"}',
      '    config: {base_url: "{{ env.MODEL_BASE_URL }}", api_key: "{{ env.OPENAI_API_KEY }}"}',
    ).replace("env:\n", "env:\n  - {name: MODEL_BASE_URL, secret: false}\n");
    const p = compileFiles({ "gateway.yaml": gw, [T]: `${HEAD}  - id: a\n    transform: {ops: []}\n` });
    expect(p.errors).toEqual([]);
    expect(p.result.bundle?.gateway.providers[0]?.baseUrl).toBe("env:MODEL_BASE_URL");
  });

  it("rejects a group model whose provider is not declared", () => {
    const p = compileFiles({
      "gateway.yaml": GATEWAY.replace(
        "[openai/gpt-4o-mini]\n    pricing",
        "[opneai/gpt-4o-mini]\n    pricing",
      ),
      [T]: `${HEAD}  - id: a\n    transform: {ops: []}\n`,
    });
    expectDiagnostic(
      p,
      "error",
      "gateway.yaml",
      9,
      14,
      /^model group `economy`: unknown provider `opneai` in `opneai\/gpt-4o-mini`; did you mean `openai`\?$/,
    );
  });

  it("rejects an api_key naming an env var the gateway does not declare", () => {
    const p = compileFiles({
      "gateway.yaml": GATEWAY.replace('env.OPENAI_API_KEY }}"}', 'env.OPENAI_KEY }}"}'),
      [T]: `${HEAD}  - id: a\n    transform: {ops: []}\n`,
    });
    expectOnlyError(p, "gateway.yaml", 6, 23, /^`env\.OPENAI_KEY` is not declared in this file's `env`/);
  });
});
