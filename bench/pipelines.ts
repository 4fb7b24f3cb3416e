/**
 * The workflows the bench runs, written as YAML and compiled with our own compiler, so the bench
 * measures exactly what `npm run build` would ship. A pipeline of N transform steps: each step
 * reads the previous step's result and bumps a counter on every item, the same work the two
 * baselines in bench/entry.ts do by hand.
 */
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Bundle } from "../src/bundle.ts";
import { compileProject } from "../src/compiler/index.ts";

export const PIPELINE_SIZES = [1, 10, 50] as const;

export function pipelineName(steps: number): string {
  return `bench-${steps}`;
}

/** The invoke body every run gets: three order lines. */
export const BENCH_PARAMS = {
  items: [
    { id: "a-100", n: 0 },
    { id: "b-200", n: 0 },
    { id: "c-300", n: 0 },
  ],
};

/**
 * The 10-step pipeline with each burst-shaping setting (npm run bench:bursts, docs/triggers.md):
 * the name, and the lines of its `invoke:` block. Limits no bench reaches where the setting would
 * delay a run; the burst pipeline's throttle is the one that shapes its 10,000 invokes.
 */
export const FLOW_PIPELINES: Record<string, string[]> = {
  "bench-10-concurrency": ['  concurrency: { limit: 100, key: "{{ params.items[0].id }}" }'],
  "bench-10-throttle": ['  throttle: { limit: 10000, period_s: 60, key: "{{ params.items[0].id }}" }'],
  "bench-10-debounce": ['  debounce: { period_s: 3600, key: "{{ params.items[0].id }}" }'],
  "bench-10-batch": ['  batch: { max_items: 1000, max_wait_s: 3600, key: "{{ params.items[0].id }}" }'],
  "bench-1-burst": ["  throttle: { limit: 100, period_s: 1 }"],
};

/** The 10-step pipeline as an express workflow (`history: failures`: docs/operations.md). */
export const EXPRESS_PIPELINE = "bench-10-express";

export function pipelineYaml(
  steps: number,
  flow?: { name: string; invoke: string[]; top?: string[] },
): string {
  const lines = [
    "kind: workflow",
    `name: ${flow ? flow.name : pipelineName(steps)}`,
    ...(flow?.top ?? []),
    "version: 1.0.0",
    `description: ${steps} transform steps in a chain (npm run bench).`,
    "params:",
    "  schema:",
    "    type: object",
    "    required: [items]",
    "    properties:",
    "      items:",
    "        type: array",
    "        items:",
    "          type: object",
    "          required: [id, n]",
    "          properties: { id: { type: string }, n: { type: integer } }",
    ...(flow && flow.invoke.length > 0 ? ["invoke:", ...flow.invoke] : []),
    "pipeline:",
  ];
  for (let i = 1; i <= steps; i++) {
    const from = i === 1 ? "{{ params.items }}" : `{{ step.s${i - 1}.result }}`;
    lines.push(
      `  - id: s${i}`,
      "    transform:",
      `      inputs: [{ from: "${from}" }]`,
      "      ops:",
      '        - map: { expr: "{id: id, n: n + `1`}" }',
    );
  }
  return `${lines.join("\n")}\n`;
}

/** Writes the bench pipelines into `dir/workflows`, compiles them, writes `dir/bundle.json`. */
export function buildBenchBundle(dir: string): { bundlePath: string; bundle: Bundle } {
  const wfDir = join(dir, "workflows");
  rmSync(wfDir, { recursive: true, force: true });
  mkdirSync(wfDir, { recursive: true });
  for (const n of PIPELINE_SIZES)
    writeFileSync(join(wfDir, `${pipelineName(n)}.workflow.yaml`), pipelineYaml(n));
  writeFileSync(
    join(wfDir, `${EXPRESS_PIPELINE}.workflow.yaml`),
    pipelineYaml(10, { name: EXPRESS_PIPELINE, invoke: [], top: ["history: failures"] }),
  );
  for (const [name, invoke] of Object.entries(FLOW_PIPELINES)) {
    const steps = Number(/^bench-(\d+)-/.exec(name)?.[1]);
    writeFileSync(join(wfDir, `${name}.workflow.yaml`), pipelineYaml(steps, { name, invoke }));
  }
  const result = compileProject(wfDir);
  const errors = result.diagnostics.filter((d) => d.severity === "error");
  if (!result.bundle || errors.length > 0) {
    throw new Error(`bench workflows do not compile:\n${errors.map((d) => d.text).join("\n")}`);
  }
  const bundlePath = join(dir, "bundle.json");
  writeFileSync(bundlePath, JSON.stringify(result.bundle));
  return { bundlePath, bundle: result.bundle };
}
