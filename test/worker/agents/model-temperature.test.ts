/**
 * ktsu's model group field `default_temperature` (gateway.yaml): accepted, and sent to the
 * provider as `temperature` on every call of the group, in both OpenAI and Anthropic requests.
 * A group without it sends no `temperature` (the provider's default applies).
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { run } from "../harness.ts";

const vars = env as unknown as Record<string, string>;

interface StubCall {
  path: string;
  body: Record<string, unknown>;
}

async function callsWith(marker: string): Promise<StubCall[]> {
  const res = await fetch(
    `${vars.MODEL_BASE_URL}/__log?key=${encodeURIComponent(vars.MODEL_API_KEY as string)}`,
  );
  const all = (await res.json()) as StubCall[];
  return all.filter((c) => JSON.stringify(c.body).includes(marker));
}

describe("default_temperature of a model group", () => {
  it("is sent as temperature to OpenAI and Anthropic providers, and not at all when unset", async () => {
    const marker = crypto.randomUUID();
    const e = await run("temperature-groups", { marker });
    expect(e.status).toBe("complete");
    const calls = await callsWith(marker);
    const warm = calls.find((c) => JSON.stringify(c.body).includes(`warm ${marker}`));
    const cold = calls.find((c) => JSON.stringify(c.body).includes(`cold ${marker}`));
    const plain = calls.find((c) => JSON.stringify(c.body).includes(`plain ${marker}`));
    expect(warm?.path).toBe("/chat/completions");
    expect(warm?.body.temperature).toBe(0.3);
    expect(cold?.path).toBe("/v1/messages");
    expect(cold?.body.temperature).toBe(0);
    expect(plain).toBeDefined();
    expect(plain?.body).not.toHaveProperty("temperature");
  });
});
