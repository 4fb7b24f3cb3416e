/**
 * Build checks of the protocol triggers (docs/protocols.md): `invoke.chat` and `invoke.mcp` are for
 * invocable workflows whose callers send a key (never a signature scheme); their templates read
 * only their own scope; the chat reply's streamed field and the tool's output schema are derived
 * from the last step.
 */
import { afterAll, describe, expect, it } from "vitest";
import type { CompiledWorkflow } from "../../../src/bundle.ts";
import { compileFiles, expectOnlyError, removeProjects } from "../temp-project.ts";

afterAll(removeProjects);

const AGENT = `name: answerer
description: Answers.
model: fast
params: {schema: {type: object, properties: {q: {type: string}}}}
prompt: {user: "{{ params.q }}"}
output:
  schema:
    type: object
    required: [answer, score]
    properties:
      answer: {type: string}
      score: {type: number}
`;
const GATEWAY = `env: [{name: KEY, secret: true}]
providers:
  - {name: p, type: openai, config: {base_url: "https://api.example.com/v1", api_key: "{{ env.KEY }}"}}
model_groups:
  - {name: fast, models: [p/m], pricing: [{model: m, input_per_million: 1, output_per_million: 1}]}
`;

/** A root workflow with the given `invoke:` lines (line 5 on) and pipeline. */
function wf(invoke: string, pipeline = "  - id: a\n    transform: {ops: []}\n"): string {
  return `kind: workflow
name: w
params: {schema: {type: object}}
invoke:
${invoke}pipeline:
${pipeline}`;
}

function compiled(files: Record<string, string>): CompiledWorkflow {
  const p = compileFiles(files);
  expect(p.errors).toEqual([]);
  return p.result.bundle?.workflows["w.workflow.yaml"] as CompiledWorkflow;
}

const agentStep = (stream = "true", id = "talk") =>
  `  - id: ${id}\n    agent: ./answerer.agent.yaml\n    stream: ${stream}\n    params: {q: "x"}\n`;

describe("invoke.chat", () => {
  it("compiles its params and reply templates", () => {
    const w = compiled({
      "w.workflow.yaml": wf(
        '  chat:\n    params: {q: "{{ messages[-1].content }}"}\n    reply: "{{ output.result }}"\n',
      ),
    });
    expect(w.chat).toEqual({
      params: { t: "obj", entries: [["q", { t: "expr", e: "messages[-1].content" }]] },
      reply: { t: "expr", e: "output.result" },
      stream: null,
    });
  });

  it("takes the defaults from an empty block", () => {
    expect(compiled({ "w.workflow.yaml": wf("  chat: {}\n") }).chat).toEqual({
      params: null,
      reply: null,
      stream: null,
    });
  });

  it("refuses a params template that reads what a chat request does not have", () => {
    const p = compileFiles({ "w.workflow.yaml": wf('  chat:\n    params: {q: "{{ params.q }}"}\n') });
    expectOnlyError(
      p,
      "w.workflow.yaml",
      6,
      17,
      /^`invoke.chat.params` may read only `messages`, `user`, `metadata`, not `params`/,
    );
  });

  it("refuses a reply that reads env (a secret would reach the caller) or a step that does not exist", () => {
    const env = compileFiles({ "w.workflow.yaml": wf('  chat:\n    reply: "{{ env.TOKEN }}"\n') });
    expectOnlyError(env, "w.workflow.yaml", 6, 12, /may read only `output`, `step`, `params`, not `env`/);
    const step = compileFiles({ "w.workflow.yaml": wf('  chat:\n    reply: "{{ step.b.x }}"\n') });
    expectOnlyError(step, "w.workflow.yaml", 6, 12, /`step.b` is not a step of this pipeline/);
  });

  it("refuses a signature scheme: a chat client cannot sign its requests", () => {
    const p = compileFiles({
      "w.workflow.yaml": wf('  auth: {scheme: github, secret: "{{ env.S }}"}\n  chat: {}\n').replace(
        "params:",
        "env: [{name: S, secret: true}]\nparams:",
      ),
    });
    expectOnlyError(
      p,
      "w.workflow.yaml",
      7,
      3,
      /^`invoke.chat` needs `invoke.auth` with a credential header \(`bearer` or `raw`\), or none: a chat client cannot sign requests with `github`$/,
    );
  });

  it("is for invocable workflows only", () => {
    const p = compileFiles({
      "sub/w.workflow.yaml": wf("  chat: {}\n"),
      "main.workflow.yaml":
        "kind: workflow\nname: main\nparams: {schema: {type: object}}\npipeline:\n  - id: c\n    workflow: sub/w.workflow.yaml\n",
    });
    expectOnlyError(p, "sub/w.workflow.yaml", 5, 3, /^`invoke.chat` is for invocable workflows/);
  });

  it("streams a reply that reads a string field of the last step, a streaming agent", () => {
    const files = { "answerer.agent.yaml": AGENT, "gateway.yaml": GATEWAY };
    const last = compiled({
      ...files,
      "w.workflow.yaml": wf('  chat:\n    reply: "{{ output.answer }}"\n', agentStep()),
    });
    expect(last.chat?.stream).toEqual({ step: "talk", field: ["answer"] });
    const named = compiled({
      ...files,
      "w.workflow.yaml": wf(
        '  chat:\n    reply: "{{ step.talk.answer }}"\n',
        `${agentStep()}  - id: after\n    transform: {ops: []}\n`,
      ),
    });
    expect(named.chat?.stream).toEqual({ step: "talk", field: ["answer"] });
  });

  it("sends the reply whole when it cannot be read as the model writes it", () => {
    const files = { "answerer.agent.yaml": AGENT, "gateway.yaml": GATEWAY };
    const cases = [
      ['"{{ output.score }}"', agentStep()], // not a string
      ['"{{ output.answer }}"', agentStep("false")], // the step does not stream
      ['"Answer: {{ output.answer }}"', agentStep()], // more than the field
      ['"{{ upper(output.answer) }}"', agentStep()], // a function of it
      ['"{{ output.answer }}"', `${agentStep()}  - id: after\n    transform: {ops: []}\n`], // not the last step
    ];
    for (const [reply, pipeline] of cases) {
      const w = compiled({
        ...files,
        "w.workflow.yaml": wf(`  chat:\n    reply: ${reply}\n`, pipeline as string),
      });
      expect(w.chat?.stream, `${reply}`).toBeNull();
    }
  });
});

describe("invoke.mcp", () => {
  it("names the tool after the workflow, described as the workflow is, unless it says otherwise", () => {
    const plain = compiled({
      "w.workflow.yaml": wf("  mcp: {}\n").replace("name: w", "name: w\ndescription: Does w."),
    });
    expect(plain.mcp).toMatchObject({ title: "w", description: "Does w." });
    const own = compiled({ "w.workflow.yaml": wf("  mcp: {title: Tool W, description: Mine.}\n") });
    expect(own.mcp).toMatchObject({ title: "Tool W", description: "Mine." });
  });

  it("derives the output schema from the last step's kind and output.schema", () => {
    const transform = compiled({
      "w.workflow.yaml": wf(
        "  mcp: {}\n",
        "  - id: a\n    transform: {ops: []}\n    output: {schema: {type: object}}\n",
      ),
    });
    expect(transform.mcp?.outputSchema).toEqual({
      type: "object",
      properties: { result: { type: "object" } },
      required: ["result"],
    });
    const agent = compiled({
      "answerer.agent.yaml": AGENT,
      "gateway.yaml": GATEWAY,
      "w.workflow.yaml": wf("  mcp: {}\n", agentStep("false")),
    });
    expect(agent.mcp?.outputSchema).toMatchObject({ type: "object", required: ["answer", "score"] });
  });

  it("declares no output schema when the last step may not produce it (a condition, on_error: continue)", () => {
    for (const extra of [
      '    condition: "params.x"\n',
      "    on_error: continue\n    webhook: {url: https://example.com}\n",
    ]) {
      const step = extra.includes("webhook")
        ? `  - id: a\n${extra}`
        : `  - id: a\n    transform: {ops: []}\n    output: {schema: {type: object}}\n${extra}`;
      expect(compiled({ "w.workflow.yaml": wf("  mcp: {}\n", step) }).mcp?.outputSchema).toBeNull();
    }
  });

  it("refuses a signature scheme: an MCP host cannot sign its requests", () => {
    const p = compileFiles({
      "w.workflow.yaml": wf('  auth: {scheme: stripe, secret: "{{ env.S }}"}\n  mcp: {}\n').replace(
        "params:",
        "env: [{name: S, secret: true}]\nparams:",
      ),
    });
    expectOnlyError(p, "w.workflow.yaml", 7, 3, /an MCP host cannot sign requests with `stripe`/);
  });
});

describe("invoke.a2a", () => {
  it("compiles the skill (the workflow's description by default) and lists tasks by their context", () => {
    const w = compiled({
      "w.workflow.yaml": wf(
        '  a2a:\n    skill: {name: Triage, tags: [a], examples: [b]}\n    params: {q: "{{ text }}", c: "{{ data.customer }}"}\n',
      ).replace("name: w", "name: w\ndescription: Does w."),
    });
    expect(w.a2a?.skill).toEqual({ name: "Triage", description: "Does w.", tags: ["a"], examples: ["b"] });
    expect(w.a2a?.params?.t).toBe("obj");
    expect(w.search).toEqual({ a2a_context: { t: "expr", e: "request.a2a.context_id" } });
  });

  it("refuses a params template that reads what a message does not have, and a signature scheme", () => {
    const p = compileFiles({ "w.workflow.yaml": wf('  a2a:\n    params: {q: "{{ messages }}"}\n') });
    expectOnlyError(
      p,
      "w.workflow.yaml",
      6,
      17,
      /may read only `text`, `data`, `message`, `metadata`, not `messages`/,
    );
    const signed = compileFiles({
      "w.workflow.yaml": wf('  auth: {scheme: slack, secret: "{{ env.S }}"}\n  a2a: {}\n').replace(
        "params:",
        "env: [{name: S, secret: true}]\nparams:",
      ),
    });
    expectOnlyError(signed, "w.workflow.yaml", 7, 3, /an A2A client cannot sign requests with `slack`/);
  });
});
