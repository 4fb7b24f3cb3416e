/**
 * Starting a run (src/run/start/start-run.ts) over a fake environment that records every Durable
 * Object it is asked for: a workflow that shapes no burst never contacts a flow key (it costs
 * what it cost before), one that does asks its key before its run exists, and a re-run of a
 * debounced workflow is a run of its own, never folded into a group.
 */
import { describe, expect, it } from "vitest";
import type { CompiledWorkflow } from "../../../src/bundle.ts";
import { startRun } from "../../../src/run/start/start-run.ts";
import { testWorkflow } from "../../support/compiled.ts";

interface Recorded {
  calls: string[];
  env: Env;
}

/** A namespace whose objects record each call made on them (`<binding> <name> <method>`). */
function fakeEnv(answers: Record<string, unknown> = {}): Recorded {
  const calls: string[] = [];
  let n = 0;
  const namespace = (binding: string) => ({
    newUniqueId: () => {
      const id = `unique-${++n}`;
      return { toString: () => id };
    },
    idFromName: (name: string) => ({ toString: () => `named:${name}` }),
    idFromString: (s: string) => ({ toString: () => s }),
    get: (id: { toString(): string }) =>
      new Proxy(
        {},
        {
          get: (_t, method: string) => async (arg: unknown) => {
            calls.push(`${binding} ${id.toString()} ${method}`);
            return answers[method] ?? { outcome: "started", arg };
          },
        },
      ),
  });
  const env = new Proxy({} as Record<string, unknown>, {
    get: (_t, binding: string) => {
      if (binding === "RUNS" || binding === "FLOW_KEYS") return namespace(binding);
      calls.push(`env ${binding}`);
      return undefined;
    },
  });
  return { calls, env: env as unknown as Env };
}

const start = (env: Env, wf: CompiledWorkflow, coalesce = true) =>
  startRun(env, wf.key, wf, { params: {}, request: {}, idempotencyKey: null, waitS: 0, coalesce });

describe("starting a run", () => {
  it("contacts no flow key for a workflow that shapes no burst: one call, the run's own start", async () => {
    const { calls, env } = fakeEnv();
    await start(env, testWorkflow());
    expect(calls).toEqual(["RUNS unique-1 start"]);
  });

  it("asks the workflow's flow key before its run exists, then starts the run", async () => {
    const { calls, env } = fakeEnv({ admit: { outcome: "start", runId: "unique-1" } });
    const wf = testWorkflow({
      invoke: {
        headers: [],
        response: null,
        rateLimit: null,
        throttle: { limit: 1, periodMs: 1000, key: null },
      },
    });
    await start(env, wf);
    expect(calls).toEqual(["FLOW_KEYS named:test\n admit", "RUNS unique-1 start"]);
  });

  it("starts a re-run of a debounced workflow as a run of its own, past no flow key", async () => {
    const { calls, env } = fakeEnv();
    const wf = testWorkflow({
      invoke: {
        headers: [],
        response: null,
        rateLimit: null,
        debounce: { periodMs: 1000, maxWaitMs: 5000, key: null },
      },
    });
    await start(env, wf, false);
    expect(calls).toEqual(["RUNS unique-1 start"]);
  });
});
