/**
 * The queue trigger (src/triggers/queue/queue.ts) with messages of any body: JSON values of any
 * shape, text, bytes, structured-clone values, deeply nested ones. Each message is settled on its
 * own, never the batch: acked once its run exists, or retried (its way to the dead-letter queue)
 * with no run, never both, never an exception.
 */
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import fc from "fast-check";
import { afterEach, describe, expect, it, vi } from "vitest";
import worker from "../../src/index.ts";
import { fcSettings, propTimeoutMs } from "./fc-settings.ts";

afterEach(() => vi.restoreAllMocks());

/** A value nested `depth` deep (objects or arrays), with `leaf` inside. */
function nested(depth: number, leaf: unknown, arrays: boolean): unknown {
  let v = leaf;
  for (let i = 0; i < depth; i++) v = arrays ? [v] : { k: v };
  return v;
}

const valid = fc.record({
  key: fc.string({ minLength: 1, maxLength: 8 }),
  order: fc.integer({ min: 1, max: 99 }),
});
const body = fc.oneof(
  valid,
  valid.map((v) => JSON.stringify(v)),
  valid.map((v) => new TextEncoder().encode(JSON.stringify(v))),
  fc.jsonValue(),
  fc.string(),
  fc.uint8Array({ maxLength: 64 }),
  fc.constantFrom<unknown>(new Date(0), new Map([["a", 1]]), Number.NaN, -0, null, [], {}),
  // Deep values are described, and made inside the property: the report prints the description.
  fc.record({
    deep: fc.integer({ min: 1, max: 20_000 }),
    arrays: fc.boolean(),
    inside: valid,
    text: fc.boolean(),
  }),
);

/** The body a case describes (a deep one is made here, from its description). */
function made(b: unknown): unknown {
  if (!b || typeof b !== "object" || !("deep" in b) || !("inside" in b)) return b;
  const d = b as { deep: number; arrays: boolean; inside: object; text: boolean };
  if (!d.text) return { ...d.inside, deep: nested(d.deep, 1, d.arrays) };
  // As text without JSON.stringify, which would overflow the stack itself.
  const [open, close] = d.arrays ? ["[", "]"] : ['{"k":', "}"];
  return `${JSON.stringify(d.inside).slice(0, -1)},"deep":${open.repeat(d.deep)}1${close.repeat(d.deep)}}`;
}

describe("queue messages of any body", () => {
  it(
    "acks a message once its run exists, or retries it with no run, each on its own",
    async () => {
      vi.spyOn(console, "error").mockImplementation(() => {});
      vi.spyOn(console, "warn").mockImplementation(() => {});
      await fc.assert(
        fc.asyncProperty(fc.array(body, { minLength: 1, maxLength: 4 }), async (bodies) => {
          const acked = new Set<string>();
          const retried = new Set<string>();
          const ids = bodies.map(() => crypto.randomUUID());
          const batch = {
            queue: "fixture-orders",
            messages: bodies.map((b, i) => ({
              id: ids[i],
              timestamp: new Date(),
              body: made(b),
              attempts: 1,
              ack: () => acked.add(ids[i] as string),
              retry: () => retried.add(ids[i] as string),
            })),
            ackAll: () => {
              throw new Error("the batch was acked as a whole");
            },
            retryAll: () => {
              throw new Error("the batch was retried as a whole");
            },
          } as unknown as MessageBatch<unknown>;
          const ctx = createExecutionContext();
          await (worker as Required<Pick<ExportedHandler<Env>, "queue">>).queue(batch, env as Env, ctx);
          await waitOnExecutionContext(ctx);
          for (const id of ids) {
            expect(acked.has(id) !== retried.has(id)).toBe(true);
            const run = env.RUNS.idFromName(`trig-queue\nqueue:fixture-orders:${id}`);
            const exists =
              (await (env.RUNS.get(run) as unknown as { view(): Promise<unknown> }).view()) !== null;
            expect(exists).toBe(acked.has(id));
          }
        }),
        fcSettings(env),
      );
    },
    propTimeoutMs(400, env),
  );
});
