/**
 * The providers in streaming mode (docs/agents-and-tools.md, "Streaming"): Workers AI through its
 * binding's streaming shape (a ReadableStream of `data: {"response": …}` events ending `[DONE]`),
 * each chunk handed over as it comes, the usage of the last event counted, and a stream that breaks
 * after its first chunk reset and failed (so the gateway falls back).
 */
import { describe, expect, it } from "vitest";
import type { CompiledProvider } from "../../src/bundle.ts";
import { ProviderError, type ProviderIo } from "../../src/gateway/provider.ts";
import { prepareWorkersAi } from "../../src/gateway/workers-ai.ts";

const provider = {
  name: "cf",
  type: "workers-ai",
  baseUrl: null,
  apiKeyEnv: null,
} as unknown as CompiledProvider;
const encoder = new TextEncoder();

/** A Workers AI binding whose `run` with `stream: true` answers these SSE blocks, chunk by chunk. */
function aiStreaming(blocks: string[], breakAfter: number | null = null) {
  const seen: unknown[] = [];
  return {
    seen,
    ai: {
      async run(_model: string, input: unknown) {
        seen.push(input);
        let i = 0;
        return new ReadableStream<Uint8Array>({
          pull(controller) {
            if (breakAfter !== null && i === breakAfter) {
              controller.error(new Error("connection reset"));
              return;
            }
            const block = blocks[i++];
            if (block === undefined) controller.close();
            else controller.enqueue(encoder.encode(block));
          },
        });
      },
    },
  };
}

function io(ai: ProviderIo["ai"], sink: { text: string[]; resets: number; ends: number }): ProviderIo {
  return {
    fetch: () => Promise.reject(new Error("no fetch")),
    signal: new AbortController().signal,
    deadline: Date.now() + 10_000,
    ai,
    onAttempt: () => {},
    stream: {
      text: (c) => sink.text.push(c),
      reset: () => {
        sink.resets += 1;
      },
      end: () => {
        sink.ends += 1;
      },
    },
  };
}

const req = {
  system: null,
  messages: [{ role: "user" as const, content: "hi" }],
  maxTokens: 50,
  json: false,
  jsonSchema: null,
};

describe("Workers AI in streaming mode", () => {
  it("asks the binding to stream, hands each chunk over as it comes, and counts the stream's usage", async () => {
    const { ai, seen } = aiStreaming([
      'data: {"response":"Hel"}\n\n',
      'data: {"response":"lo, "}\n\ndata: {"response":"Ada!"}\n\n',
      'data: {"response":"","usage":{"prompt_tokens":12,"completion_tokens":4,"total_tokens":16}}\n\n',
      "data: [DONE]\n\n",
    ]);
    const sink = { text: [] as string[], resets: 0, ends: 0 };
    const completion = await prepareWorkersAi("@cf/meta/llama", req, provider, {}).send(io(ai, sink));
    expect((seen[0] as { stream?: boolean }).stream).toBe(true);
    expect(sink.text).toEqual(["Hel", "lo, ", "Ada!"]);
    expect(completion).toEqual({
      text: "Hello, Ada!",
      usage: { input_tokens: 12, output_tokens: 4 },
      toolCalls: [],
    });
    expect(sink.ends).toBe(1);
  });

  it("resets what it showed and fails the call when the stream breaks after its first chunk", async () => {
    const { ai } = aiStreaming(['data: {"response":"Hel"}\n\n', 'data: {"response":"lo"}\n\n'], 2);
    const sink = { text: [] as string[], resets: 0, ends: 0 };
    await expect(prepareWorkersAi("@cf/meta/llama", req, provider, {}).send(io(ai, sink))).rejects.toThrow(
      ProviderError,
    );
    expect(sink.text).toEqual(["Hel", "lo"]);
    expect(sink.resets).toBe(1);
    expect(sink.ends).toBe(0);
  });
});
