/**
 * Hand-built compiled workflows and bundles for tests that drive the engine or a step executor
 * directly, without the compiler: only what a test cares about is spelled out.
 */
import type { Bundle, CompiledWorkflow } from "../../src/bundle.ts";

export function testWorkflow(overrides: Partial<CompiledWorkflow> = {}): CompiledWorkflow {
  return {
    key: "test.workflow.yaml",
    name: "test",
    version: null,
    description: null,
    visibility: "root",
    paramsSchema: { type: "object" },
    env: [],
    auth: null,
    invoke: { headers: [], response: null, rateLimit: null },
    schedule: [],
    queue: null,
    email: null,
    chat: null,
    mcp: null,
    a2a: null,
    policy: { costBudgetUsd: null, timeoutS: 300, timeoutSet: false },
    steps: [],
    ...overrides,
  };
}

export function testBundle(workflows: CompiledWorkflow[], overrides: Partial<Bundle> = {}): Bundle {
  return {
    format: 1,
    hash: "test",
    workflows: Object.fromEntries(workflows.map((w) => [w.key, w])),
    invocable: Object.fromEntries(workflows.map((w) => [w.name, w.key])),
    agents: {},
    gateway: { env: [], providers: [], groups: [] },
    ...overrides,
  };
}
