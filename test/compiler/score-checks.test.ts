/**
 * Build checks of `score:` and `variants:` (docs/file-format.md, "Scores" and "Variants"): every
 * misuse an error at its `file:line:col`.
 */
import { afterAll, describe, expect, it } from "vitest";
import { compileFiles, expectOnlyError, removeProjects } from "./temp-project.ts";

afterAll(removeProjects);

const GATEWAY = `env: [{name: KEY, secret: true}]
providers:
  - {name: p, type: openai, config: {base_url: "https://api.example.com/v1", api_key: "{{ env.KEY }}"}}
model_groups:
  - {name: fast, models: [p/m], pricing: [{model: m, input_per_million: 1, output_per_million: 1}]}
  - {name: slow, models: [p/n], pricing: [{model: n, input_per_million: 2, output_per_million: 2}]}
`;
const agent = (
  name: string,
  output: string,
  params = "{type: object, properties: {q: {type: string}}}",
) => `name: ${name}
description: An agent.
params: {schema: ${params}}
prompt: {user: "x"}
output: {schema: ${output}}
`;
const ANSWER = agent("answer", "{type: object, required: [text], properties: {text: {type: string}}}");
const JUDGE = agent(
  "judge",
  "{type: object, required: [score], properties: {score: {type: number}, reason: {type: string}}}",
);

/** A workflow whose one agent step has these lines (from line 8). */
function wf(lines: string): string {
  return `kind: workflow
name: w
params: {schema: {type: object}}
model_policy: {cost_budget_usd: 1}
pipeline:
  - id: a
    agent: ./answer.agent.yaml
${lines}`;
}

function compile(lines: string, extra: Record<string, string> = {}) {
  return compileFiles({
    "w.workflow.yaml": wf(lines),
    "answer.agent.yaml": ANSWER,
    "judge.agent.yaml": JUDGE,
    "gateway.yaml": GATEWAY,
    ...extra,
  });
}

describe("score:", () => {
  it("compiles expression and judge scorers", () => {
    const p = compile(`    score:
      - {name: cites, expr: "contains(output.text, 'x')"}
      - {name: helpful, judge: {agent: ./judge.agent.yaml, params: {answer: "{{ output.text }}"}}, sample: 0.2}
`);
    expect(p.errors).toEqual([]);
    const step = p.result.bundle?.workflows["w.workflow.yaml"]?.steps[0];
    expect(step?.score?.map((s) => [s.name, s.sample, s.judge?.agent ?? s.expr])).toEqual([
      ["cites", 1, "contains(output.text, 'x')"],
      ["helpful", 0.2, "judge.agent.yaml"],
    ]);
  });

  it("refuses a scorer that reads what it cannot see, and bad JMESPath", () => {
    expectOnlyError(
      compile(`    score: [{name: s, expr: "env.KEY"}]\n`),
      "w.workflow.yaml",
      8,
      29,
      /may read only `output`, `params`, `step`, not `env`/,
    );
    expectOnlyError(
      compile(`    score: [{name: s, expr: "output.["}]\n`),
      "w.workflow.yaml",
      8,
      29,
      /invalid JMESPath/,
    );
  });

  it("refuses a scorer with both expr and judge, or neither, a name given twice, and a judge that answers no score", () => {
    expectOnlyError(
      compile(`    score: [{name: s, expr: "\`true\`", judge: {agent: ./judge.agent.yaml}}]\n`),
      "w.workflow.yaml",
      8,
      13,
      /takes exactly one of `expr` and `judge`/,
    );
    expectOnlyError(
      compile(`    score: [{name: s, expr: "\`true\`"}, {name: s, expr: "\`false\`"}]\n`),
      "w.workflow.yaml",
      8,
      47,
      /scorer `s` is named twice/,
    );
    expectOnlyError(
      compile(`    score: [{name: s, judge: {agent: ./answer.agent.yaml}}]\n`),
      "w.workflow.yaml",
      8,
      38,
      /must require `score`/,
    );
  });
});

describe("variants:", () => {
  it("compiles weighted arms that replace the model group or the agent", () => {
    const p = compile(
      `    variants:
      key: "{{ params.customer }}"
      arms:
        - {name: control, weight: 9}
        - {name: slow, weight: 1, model: {group: slow}}
        - {name: v2, weight: 0, agent: ./answer2.agent.yaml}
`,
      { "answer2.agent.yaml": ANSWER.replace("name: answer", "name: answer2") },
    );
    expect(p.errors).toEqual([]);
    const step = p.result.bundle?.workflows["w.workflow.yaml"]?.steps[0] as {
      variants?: { arms: Array<{ name: string; group: string | null; agent: string | null }> };
    };
    expect(step.variants?.arms.map((a) => [a.name, a.group, a.agent])).toEqual([
      ["control", null, null],
      ["slow", "slow", null],
      ["v2", null, "answer2.agent.yaml"],
    ]);
  });

  it("refuses an arm's agent with another contract, an unknown group, and arms without weight", () => {
    const other = agent("other", "{type: object, required: [x], properties: {x: {type: string}}}");
    expectOnlyError(
      compile(
        `    variants: {arms: [{name: a, weight: 1}, {name: b, weight: 1, agent: ./other.agent.yaml}]}\n`,
        { "other.agent.yaml": other },
      ),
      "w.workflow.yaml",
      8,
      73,
      /arm `b`'s agent must take the same params and have the same `output.schema`/,
    );
    expectOnlyError(
      compile(`    variants: {arms: [{name: a, weight: 1, model: {group: nope}}]}\n`),
      "w.workflow.yaml",
      8,
      59,
      /unknown model group `nope`/,
    );
    expectOnlyError(
      compile(`    variants: {arms: [{name: a, weight: 0}]}\n`),
      "w.workflow.yaml",
      8,
      16,
      /at least one arm needs a weight above 0/,
    );
  });

  it("belongs on agent steps only", () => {
    const p = compileFiles({
      "w.workflow.yaml":
        "kind: workflow\nname: w\nparams: {schema: {type: object}}\npipeline:\n  - id: a\n    transform: {ops: []}\n    variants: {arms: [{name: a, weight: 1}]}\n",
    });
    expect(p.errors.map((e) => e.message)).toEqual([
      expect.stringMatching(/`variants` belongs on agent steps/),
    ]);
  });
});
