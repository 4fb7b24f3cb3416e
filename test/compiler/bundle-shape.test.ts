/**
 * The bundle the runtime trusts (src/bundle.ts): dependencies and ancestors, quoted step ids,
 * pre-parsed templates with their encode flags, the documented defaults, and the content hash.
 */
import { createHash } from "node:crypto";
import { afterAll, describe, expect, it } from "vitest";
import type { Bundle, CompiledWorkflow } from "../../src/bundle.ts";
import { compileFiles, removeProjects } from "./temp-project.ts";

afterAll(removeProjects);

const FILE = `kind: workflow
name: shape
params: {schema: {type: object}}
env:
  - {name: TOKEN}
  - {name: BASE, secret: false}
invoke:
  auth: {header: X-Api-Key, secret: "{{ env.TOKEN }}"}
pipeline:
  - id: fetch-user
    transform:
      inputs: [{from: "{{ params.user }}"}]
      ops:
        - sort: {field: name}
        - deduplicate: {field: id}
        - flatten: {}
  - id: second
    transform:
      inputs: [{from: fetch-user}]
      ops:
        - filter: {expr: "active"}
        - merge: [fetch-user]
  - id: post
    depends_on: [fetch-user, second]
    condition: "step.fetch-user.result && step.second.result"
    webhook:
      url: "{{ env.BASE }}/u/{{ step.fetch-user.result[0].id }}?tag={{ params.tag }}&x=1"
      headers: {X-Static: "yes", X-Id: "id-{{ params.id }}"}
      body:
        static: {a: [1, 2], b: "plain"}
        count: "{{ length(step.second.result) }}"
        items: ["{{ params.a }}", 3]
  - id: independent
    depends_on: []
    webhook: {url: "https://example.com/ping"}
`;

function compiled(): { bundle: Bundle; wf: CompiledWorkflow } {
  const p = compileFiles({ "shape.workflow.yaml": FILE });
  expect(p.errors).toEqual([]);
  const bundle = p.result.bundle as Bundle;
  return { bundle, wf: bundle.workflows["shape.workflow.yaml"] as CompiledWorkflow };
}

describe("emitted bundle", () => {
  const { bundle, wf } = compiled();
  const step = (id: string) => wf.steps.find((s) => s.id === id);

  it("links each step to the previous one unless depends_on says otherwise", () => {
    expect(wf.steps.map((s) => [s.id, s.deps])).toEqual([
      ["fetch-user", []],
      ["second", ["fetch-user"]],
      ["post", ["fetch-user", "second"]],
      ["independent", []],
    ]);
  });

  it("lists the transitive ancestors of each step in pipeline order", () => {
    expect(wf.steps.map((s) => s.ancestors)).toEqual([[], ["fetch-user"], ["fetch-user", "second"], []]);
  });

  it("quotes hyphenated step ids in conditions and templates", () => {
    expect(step("post")?.condition).toBe('step."fetch-user".result && step.second.result');
  });

  it("turns a transform input naming a step id into a quoted step read", () => {
    const s = step("second");
    expect(s?.kind === "transform" && s.inputs).toEqual([{ t: "expr", e: 'step."fetch-user"' }]);
  });

  it("compiles transform ops with their defaults", () => {
    const s = step("fetch-user");
    expect(s?.kind === "transform" && s.ops).toEqual([
      { op: "sort", field: "name", order: "asc" },
      { op: "deduplicate", field: "id" },
      { op: "flatten" },
    ]);
    const t = step("second");
    expect(t?.kind === "transform" && t.ops).toEqual([
      { op: "filter", expr: "active" },
      { op: "merge", steps: ["fetch-user"] },
    ]);
  });

  it("percent-encodes only the url expressions after the first literal `?`", () => {
    const s = step("post");
    expect(s?.kind === "webhook" && s.url).toEqual({
      t: "concat",
      parts: [
        { e: "env.BASE" },
        "/u/",
        { e: 'step."fetch-user".result[0].id' },
        "?tag=",
        { e: "params.tag", encode: true },
        "&x=1",
      ],
    });
  });

  it("keeps literal subtrees as one lit and pre-parses the rest", () => {
    const s = step("post");
    expect(s?.kind === "webhook" && s.body).toEqual({
      t: "obj",
      entries: [
        ["static", { t: "lit", v: { a: [1, 2], b: "plain" } }],
        ["count", { t: "expr", e: "length(step.second.result)" }],
        [
          "items",
          {
            t: "arr",
            items: [
              { t: "expr", e: "params.a" },
              { t: "lit", v: 3 },
            ],
          },
        ],
      ],
    });
    expect(s?.kind === "webhook" && s.headers).toEqual({
      t: "obj",
      entries: [
        ["X-Static", { t: "lit", v: "yes" }],
        ["X-Id", { t: "concat", parts: ["id-", { e: "params.id" }] }],
      ],
    });
  });

  it("applies the webhook defaults: POST, 30 s per attempt, no body, no signing", () => {
    expect(step("independent")).toMatchObject({
      method: "POST",
      timeoutS: 30,
      body: null,
      headers: null,
      sign: null,
    });
  });

  it("applies the workflow defaults: root, 300 s, no budget, secret env, lower-cased auth header", () => {
    expect(wf.visibility).toBe("root");
    expect(wf.policy).toEqual({ costBudgetUsd: null, timeoutS: 300, timeoutSet: false });
    expect(wf.env).toEqual([
      { name: "TOKEN", secret: true },
      { name: "BASE", secret: false },
    ]);
    expect(wf.auth).toEqual({ header: "x-api-key", scheme: "raw", secretEnvs: ["TOKEN"] });
  });

  it("maps the workflow name to its file and hashes the content", () => {
    expect(bundle.invocable).toEqual({ shape: "shape.workflow.yaml" });
    const { hash, ...rest } = bundle;
    expect(hash).toBe(createHash("sha256").update(JSON.stringify(rest)).digest("hex"));
  });

  it("gives the same hash for the same files", () => {
    expect(compiled().bundle.hash).toBe(bundle.hash);
  });
});

describe("sub-workflow steps", () => {
  it("point at the child's key, pass input as a template and suppress webhooks by default", () => {
    const p = compileFiles({
      "p.workflow.yaml": `kind: workflow\nname: p\nparams: {schema: {type: object}}\npipeline:\n  - id: run\n    workflow: sub/child.yaml\n    input: {x: "{{ params.x }}"}\n`,
      "sub/child.yaml": `kind: workflow\nname: child\nparams: {schema: {type: object}}\nmodel_policy: {timeout_s: 5}\npipeline:\n  - id: only\n    transform: {ops: []}\n`,
    });
    expect(p.errors).toEqual([]);
    expect(p.result.bundle?.workflows["p.workflow.yaml"]?.steps[0]).toMatchObject({
      kind: "workflow",
      workflow: "sub/child.yaml",
      input: { t: "obj", entries: [["x", { t: "expr", e: "params.x" }]] },
      webhooks: "suppress",
    });
    expect(p.result.bundle?.workflows["sub/child.yaml"]?.policy).toEqual({
      costBudgetUsd: null,
      timeoutS: 5,
      timeoutSet: true,
    });
    expect(p.result.bundle?.invocable).toEqual({ p: "p.workflow.yaml" });
  });
});
