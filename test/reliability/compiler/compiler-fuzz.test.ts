/**
 * Property-based tests of the compiler (fast-check): a valid project with every step type is
 * mutated at random — keys dropped, renamed, duplicated; values replaced by other types; random
 * text in expressions and templates; random step ids; dependency and sub-workflow cycles; raw
 * text damage — and compiled from a temp dir. Whatever the input, `compileProject` never throws,
 * every diagnostic reads `file:line:col: message` with a line and column inside that file, and
 * the result has either a bundle or at least one error (never both, never neither).
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { parse, stringify } from "yaml";
import { type CompileResult, compileProject } from "../../../src/compiler/index.ts";

const BASE: Record<string, string> = {
  "gateway.yaml": `env:
  - { name: MODEL_KEY, secret: true }
providers:
  - name: stub
    type: openai
    config:
      base_url: "http://127.0.0.1:1/v1"
      api_key: "{{ env.MODEL_KEY }}"
model_groups:
  - name: economy
    models: [stub/small]
    default_max_tokens: 100
    pricing:
      - { model: small, input_per_million: 1, output_per_million: 2 }
`,
  "main.workflow.yaml": `kind: workflow
name: main
version: 1.2.3
description: every step type
params:
  schema:
    type: object
    required: [text]
    properties:
      text: { type: string }
      tier: { type: string }
env:
  - { name: TOKEN, secret: true }
  - { name: TARGET, secret: false }
invoke:
  auth:
    header: Authorization
    scheme: bearer
    secret: "{{ env.TOKEN }}"
model_policy:
  cost_budget_usd: 0.5
  timeout_s: 60
pipeline:
  - id: shape
    transform:
      inputs:
        - from: "{{ params }}"
      ops:
        - map: { expr: "{t: text}" }
        - filter: { expr: "t != 'x'" }
    output:
      schema: { type: array }
  - id: classify
    agent: ./agents/label.agent.yaml
    params:
      text: "{{ step.shape.result[0].t }}"
    model: { group: economy, max_tokens: 50 }
  - id: chat
    agent: core/chat@1
    depends_on: [shape]
    params:
      prompt: "hello {{ params.text }}"
  - id: child
    workflow: ./sub.yaml
    depends_on: [classify, chat]
    webhooks: execute
    input:
      message: "{{ step.classify.label }}"
  - id: post-result
    condition: "params.tier == 'vip'"
    depends_on: [child, chat]
    webhook:
      url: "{{ env.TARGET }}/hook?x={{ params.text }}"
      method: POST
      timeout_s: 5
      headers: { x-kind: "result" }
      body:
        label: "{{ step.classify.label }}"
        chat: "{{ step.chat.text }}"
  - id: done
    depends_on: [post-result]
    transform:
      inputs:
        - from: "{{ step.post-result.status }}"
      ops: []
`,
  "sub.yaml": `kind: workflow
name: sub
visibility: sub-workflow
params:
  schema:
    type: object
    required: [message]
    properties:
      message: { type: string }
pipeline:
  - id: format
    transform:
      ops:
        - map: { expr: "{m: message}" }
  - id: send
    webhook:
      url: "http://127.0.0.1:1/echo"
      body: { m: "{{ step.format.result[0].m }}" }
`,
  "agents/label.agent.yaml": `name: label
description: labels text
model: economy
max_turns: 1
params:
  schema:
    type: object
    required: [text]
    properties:
      text: { type: string }
prompt:
  system: You label text.
  user: "Label: {{ params.text }}"
output:
  schema:
    type: object
    required: [label]
    properties:
      label: { type: string }
`,
};
const FILES = Object.keys(BASE);
const RUNS = 200;

const made: string[] = [];
afterAll(() => {
  for (const d of made.splice(0)) rmSync(d, { recursive: true, force: true });
});

function compile(files: Record<string, string>): { dir: string; result: CompileResult } {
  const dir = mkdtempSync(join(tmpdir(), "wf-fuzz-"));
  made.push(dir);
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, name)), { recursive: true });
    writeFileSync(join(dir, name), text);
  }
  let result: CompileResult;
  try {
    result = compileProject(dir);
  } finally {
    // Keep the dir only long enough to read the files back for positions.
  }
  return { dir, result };
}

/** The invariants every compile result must hold, whatever the input. */
function expectWellFormed(dir: string, result: CompileResult): void {
  const errors = result.diagnostics.filter((d) => d.severity === "error");
  expect(result.bundle === null, "a bundle exactly when there is no error").toBe(errors.length > 0);
  for (const d of result.diagnostics) {
    const prefix = d.severity === "error" ? "" : "warning: ";
    expect(d.text).toBe(`${d.file}:${d.line}:${d.col}: ${prefix}${d.message}`);
    expect(d.message.trim().length).toBeGreaterThan(0);
    expect(d.file.startsWith(dir), `diagnostic outside the project: ${d.text}`).toBe(true);
    let lines: string[];
    try {
      lines = readFileSync(d.file, "utf8").split("\n");
    } catch {
      // A diagnostic about a file that does not exist (a missing path) may only point at its start.
      expect([d.line, d.col]).toEqual([1, 1]);
      continue;
    }
    expect(Number.isInteger(d.line) && d.line >= 1 && d.line <= lines.length, `line of ${d.text}`).toBe(true);
    const line = lines[d.line - 1] ?? "";
    expect(Number.isInteger(d.col) && d.col >= 1 && d.col <= line.length + 1, `col of ${d.text}`).toBe(true);
  }
}

// ---- structural mutations ----------------------------------------------------------------------

type Data = unknown;
type Path = Array<string | number>;

function pathsOf(v: Data, at: Path = [], out: Path[] = []): Path[] {
  out.push(at);
  if (Array.isArray(v)) {
    for (const [i, x] of v.entries()) pathsOf(x, [...at, i], out);
  } else if (v !== null && typeof v === "object")
    for (const [k, x] of Object.entries(v)) pathsOf(x, [...at, k], out);
  return out;
}

function parentOf(
  root: Data,
  path: Path,
): { parent: Record<string, Data> | Data[]; key: string | number } | null {
  if (path.length === 0) return null;
  let node = root as Record<string | number, Data>;
  for (const seg of path.slice(0, -1)) node = node[seg] as Record<string | number, Data>;
  return { parent: node as Record<string, Data>, key: path[path.length - 1] as string | number };
}

/** Text that exercises expressions, templates, ids and paths. */
const nastyText = fc.oneof(
  fc.string({ maxLength: 30 }),
  fc.constantFrom(
    "{{",
    "}}",
    "{{ }}",
    "{{ params.",
    "{{ step.nope.x }}",
    "{{ step.post-result.status }}",
    "{{ env.UNDECLARED }}",
    "{{ env.TOKEN }}",
    "step.shape.result[",
    "`true`",
    "'unterminated",
    "a || && b",
    "length(@) > `1`",
    "./missing.yaml",
    "../outside.yaml",
    "./sub.yaml",
    "./main.workflow.yaml",
    "core/nope@1",
    "ktsu/parser@1.0.0",
    "core/chat@9",
    "economy",
    "bogus-group",
    "raw",
    "bearer",
    "sub-workflow",
    "1.2",
    "x".repeat(300),
    "\u0000\u0007\u200b",
    "émoji 🎉",
  ),
  fc.string({ maxLength: 20 }).map((s) => `{{ ${s} }}`),
  fc.string({ maxLength: 20 }).map((s) => `text {{ params.${s} }} more`),
);

const anyValue: fc.Arbitrary<Data> = fc.oneof(
  fc.constantFrom(null, 0, -1, 1.5, 86401, true, false, "", [], {}),
  nastyText,
  fc.array(nastyText, { maxLength: 3 }),
  fc.dictionary(nastyText, nastyText, { maxKeys: 3 }),
  fc.jsonValue({ maxDepth: 2 }),
);

const KNOWN_KEYS = [
  "kind",
  "name",
  "version",
  "params",
  "schema",
  "env",
  "invoke",
  "auth",
  "pipeline",
  "id",
  "agent",
  "workflow",
  "transform",
  "webhook",
  "depends_on",
  "condition",
  "input",
  "webhooks",
  "model",
  "output",
  "ops",
  "inputs",
  "from",
  "url",
  "method",
  "body",
  "headers",
  "sign",
  "timeout_s",
  "cost_budget_usd",
  "model_policy",
  "providers",
  "model_groups",
  "prompt",
];

type Mutation =
  | { op: "drop"; pick: number }
  | { op: "rename"; pick: number; name: string }
  | { op: "retype"; pick: number; value: Data }
  | { op: "text"; pick: number; value: string }
  | { op: "step-id"; pick: number; value: string }
  | { op: "cycle"; pick: number; other: number }
  | { op: "sub-cycle"; pick: number }
  | { op: "copy-step"; pick: number };

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ op: fc.constant("drop" as const), pick: fc.nat() }),
  fc.record({
    op: fc.constant("rename" as const),
    pick: fc.nat(),
    name: fc.oneof(fc.constantFrom(...KNOWN_KEYS), fc.string({ maxLength: 12 })),
  }),
  fc.record({ op: fc.constant("retype" as const), pick: fc.nat(), value: anyValue }),
  fc.record({ op: fc.constant("text" as const), pick: fc.nat(), value: nastyText }),
  fc.record({
    op: fc.constant("step-id" as const),
    pick: fc.nat(),
    value: fc.oneof(
      fc.constantFrom("shape", "child", "a b", "x.y", "-", "post-result"),
      fc.string({ maxLength: 10 }),
    ),
  }),
  fc.record({ op: fc.constant("cycle" as const), pick: fc.nat(), other: fc.nat() }),
  fc.record({ op: fc.constant("sub-cycle" as const), pick: fc.nat() }),
  fc.record({ op: fc.constant("copy-step" as const), pick: fc.nat() }),
);

function steps(doc: Data): Array<Record<string, Data>> {
  const p = (doc as { pipeline?: unknown } | null)?.pipeline;
  return Array.isArray(p)
    ? (p.filter((s) => s !== null && typeof s === "object") as Array<Record<string, Data>>)
    : [];
}

function applyMutation(doc: Data, m: Mutation): Data {
  const all = pathsOf(doc);
  const path = all[m.pick % all.length] as Path;
  const slot = parentOf(doc, path);
  switch (m.op) {
    case "drop":
      if (!slot) return null;
      if (Array.isArray(slot.parent)) slot.parent.splice(slot.key as number, 1);
      else delete slot.parent[slot.key as string];
      return doc;
    case "rename":
      if (!slot || Array.isArray(slot.parent)) return doc;
      slot.parent[m.name] = slot.parent[slot.key as string];
      if (m.name !== slot.key) delete slot.parent[slot.key as string];
      return doc;
    case "retype":
      if (!slot) return m.value;
      (slot.parent as Record<string | number, Data>)[slot.key] = m.value;
      return doc;
    case "text": {
      const strings = all.filter((p) => typeof getAt(doc, p) === "string");
      const target = strings[m.pick % Math.max(1, strings.length)];
      const s = target ? parentOf(doc, target) : null;
      if (s) (s.parent as Record<string | number, Data>)[s.key] = m.value;
      return doc;
    }
    case "step-id": {
      const list = steps(doc);
      const step = list[m.pick % Math.max(1, list.length)];
      if (step) step.id = m.value;
      return doc;
    }
    case "cycle": {
      const list = steps(doc);
      const a = list[m.pick % Math.max(1, list.length)];
      const b = list[m.other % Math.max(1, list.length)];
      if (a && b) {
        a.depends_on = [b.id as Data];
        b.depends_on = [a.id as Data];
      }
      return doc;
    }
    case "sub-cycle": {
      const list = steps(doc);
      const a = list[m.pick % Math.max(1, list.length)];
      if (a) {
        for (const k of ["agent", "transform", "webhook", "params", "output"]) delete a[k];
        a.workflow = m.pick % 2 === 0 ? "./sub.yaml" : "./main.workflow.yaml";
        a.input = {};
      }
      return doc;
    }
    case "copy-step": {
      const list = steps(doc);
      const a = list[m.pick % Math.max(1, list.length)];
      if (a) (doc as { pipeline: Data[] }).pipeline.push(structuredClone(a));
      return doc;
    }
  }
}

function getAt(doc: Data, path: Path): Data {
  let node = doc as Record<string | number, Data> | null;
  for (const seg of path) node = (node?.[seg] ?? null) as Record<string | number, Data> | null;
  return node;
}

// ---- textual mutations -------------------------------------------------------------------------

type Edit =
  | { op: "insert"; at: number; text: string }
  | { op: "delete"; at: number; length: number }
  | { op: "dup-line"; at: number };

const edit: fc.Arbitrary<Edit> = fc.oneof(
  fc.record({
    op: fc.constant("insert" as const),
    at: fc.nat(),
    text: fc.oneof(
      fc.string({ maxLength: 8 }),
      fc.constantFrom(
        "\t",
        ":",
        "- ",
        "{",
        "[",
        '"',
        "'",
        "&a",
        "*a",
        "!!binary",
        "\n  ",
        "---\n",
        "? ",
        "|",
      ),
    ),
  }),
  fc.record({ op: fc.constant("delete" as const), at: fc.nat(), length: fc.integer({ min: 1, max: 40 }) }),
  fc.record({ op: fc.constant("dup-line" as const), at: fc.nat() }),
);

function applyEdit(text: string, e: Edit): string {
  if (e.op === "insert") {
    const at = e.at % (text.length + 1);
    return text.slice(0, at) + e.text + text.slice(at);
  }
  if (e.op === "delete") {
    const at = e.at % (text.length + 1);
    return text.slice(0, at) + text.slice(at + e.length);
  }
  // A duplicated `key: value` line is a duplicate key in the same map.
  const lines = text.split("\n");
  const i = e.at % lines.length;
  lines.splice(i, 0, lines[i] ?? "");
  return lines.join("\n");
}

// ---- properties --------------------------------------------------------------------------------

describe("compiler under random input", () => {
  it("compiles the unmutated base project (so mutations start from something valid)", () => {
    const { dir, result } = compile(BASE);
    expectWellFormed(dir, result);
    expect(result.diagnostics.filter((d) => d.severity === "error").map((d) => d.text)).toEqual([]);
    expect(Object.keys(result.bundle?.invocable ?? {})).toEqual(["main"]);
  });

  it.each([
    ["empty", ""],
    ["only a comment", "# TODO\n"],
    ["a null document", "null\n"],
    ["a bare document marker", "---\n"],
  ])("rejects a workflow file that is %s instead of silently dropping it", (_what, text) => {
    const { dir, result } = compile({ ...BASE, "main.workflow.yaml": text });
    expectWellFormed(dir, result);
    expect(result.bundle).toBeNull();
    const errors = result.diagnostics.filter((d) => d.severity === "error");
    expect(errors.map((d) => [d.file, d.line, d.col])).toEqual([[join(dir, "main.workflow.yaml"), 1, 1]]);
  });

  it("reports, without crashing, a sub-workflow whose params.schema is null", () => {
    const sub = (BASE["sub.yaml"] as string).replace(/ {2}schema:\n(?: {4}.*\n)+/, "  schema: null\n");
    expect(sub).toContain("schema: null");
    const { dir, result } = compile({ ...BASE, "sub.yaml": sub });
    expectWellFormed(dir, result);
    expect(result.bundle).toBeNull();
  });

  it("reports an alias without its anchor as a YAML error at the alias", () => {
    const main = (BASE["main.workflow.yaml"] as string).replace("agent: core/chat@1", "agent: *nowhere");
    const { dir, result } = compile({ ...BASE, "main.workflow.yaml": main });
    expectWellFormed(dir, result);
    const errors = result.diagnostics.filter((d) => d.severity === "error");
    const line = main.split("\n").findIndex((l) => l.includes("*nowhere")) + 1;
    expect(errors.map((d) => [d.line, d.col, /alias/i.test(d.message)])).toEqual([[line, 12, true]]);
  });

  it("refuses a YAML alias bomb with an error instead of expanding it", () => {
    const levels = ["a: &a [x, x, x, x, x, x, x, x, x, x]"];
    for (let i = 1; i < 9; i++) {
      const prev = String.fromCharCode(96 + i);
      levels.push(
        `${String.fromCharCode(97 + i)}: &${String.fromCharCode(97 + i)} [${Array(10).fill(`*${prev}`).join(", ")}]`,
      );
    }
    const { dir, result } = compile({ ...BASE, "main.workflow.yaml": `${levels.join("\n")}\n` });
    expectWellFormed(dir, result);
    expect(result.bundle).toBeNull();
  });

  it("never throws and reports well-placed diagnostics for structurally mutated files", () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.nat(), mutation), { minLength: 1, maxLength: 4 }), (mutations) => {
        const files = { ...BASE };
        for (const [which, m] of mutations) {
          const name = FILES[which % FILES.length] as string;
          const doc = parse(files[name] as string) as Data;
          files[name] = stringify(applyMutation(doc, m) ?? null);
        }
        const { dir, result } = compile(files);
        expectWellFormed(dir, result);
      }),
      { numRuns: RUNS },
    );
  }, 60_000);

  it("never throws and reports well-placed diagnostics for damaged YAML text", () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.nat(), edit), { minLength: 1, maxLength: 5 }), (edits) => {
        const files = { ...BASE };
        for (const [which, e] of edits) {
          const name = FILES[which % FILES.length] as string;
          files[name] = applyEdit(files[name] as string, e);
        }
        const { dir, result } = compile(files);
        expectWellFormed(dir, result);
      }),
      { numRuns: RUNS },
    );
  }, 60_000);

  it("never throws on arbitrary YAML documents in place of a workflow file", () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 4 }), fc.nat(), (value, which) => {
        const name = FILES[which % FILES.length] as string;
        const { dir, result } = compile({ ...BASE, [name]: stringify(value) });
        expectWellFormed(dir, result);
        // No JSON value is a valid replacement for any of these files (the bundle would lose them).
        expect(result.bundle).toBeNull();
      }),
      { numRuns: 100 },
    );
  }, 60_000);
});
