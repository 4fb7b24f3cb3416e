/**
 * What a provider entry of gateway.yaml may say in `config`, by its type: the output token
 * limit's field (`max_tokens_field`) is an `openai` setting, compiled into the bundle as written;
 * a field another type does not take is a build error at its key.
 */
import { afterAll, describe, expect, it } from "vitest";
import { compileFiles, expectOnlyError, HEAD, removeProjects } from "./temp-project.ts";

afterAll(removeProjects);

const T = "t.workflow.yaml";
const STEP = `${HEAD}  - id: ask\n    agent: core/chat@1\n    params: {prompt: hi}\n`;
const gateway = (provider: string) => `env:
  - {name: KEY, secret: true}
providers:
${provider}
model_groups:
  - name: g
    models: [p/m]
`;

describe("gateway.yaml provider config", () => {
  it("compiles an openai entry's max_tokens_field into the bundle", () => {
    const p = compileFiles({
      "gateway.yaml": gateway(
        `  - name: p\n    type: openai\n    config: {api_key: "{{ env.KEY }}", max_tokens_field: max_completion_tokens}`,
      ),
      [T]: STEP,
    });
    expect(p.errors).toEqual([]);
    expect(p.result.bundle?.gateway.providers[0]).toEqual({
      name: "p",
      type: "openai",
      baseUrl: "https://api.openai.com/v1",
      apiKeyEnv: "KEY",
      maxTokensField: "max_completion_tokens",
    });
  });

  it("leaves the field out of an entry that does not set it (decided per call)", () => {
    const p = compileFiles({
      "gateway.yaml": gateway(
        `  - name: p\n    type: openai\n    config: {base_url: "http://127.0.0.1:8000/v1"}`,
      ),
      [T]: STEP,
    });
    expect(p.errors).toEqual([]);
    expect(p.result.bundle?.gateway.providers[0]).toEqual({
      name: "p",
      type: "openai",
      baseUrl: "http://127.0.0.1:8000/v1",
      apiKeyEnv: null,
    });
  });

  it("rejects max_tokens_field on an anthropic entry, naming the type that takes it", () => {
    const p = compileFiles({
      "gateway.yaml": gateway(`  - name: p\n    type: anthropic\n    config: {max_tokens_field: max_tokens}`),
      [T]: STEP,
    });
    expectOnlyError(
      p,
      "gateway.yaml",
      6,
      14,
      /^provider `p`: `max_tokens_field` does not apply to type `anthropic` \(only to `openai`\)$/,
    );
  });

  it("rejects a value other than max_tokens or max_completion_tokens", () => {
    const p = compileFiles({
      "gateway.yaml": gateway(
        `  - name: p\n    type: openai\n    config: {max_tokens_field: max_output_tokens}`,
      ),
      [T]: STEP,
    });
    expectOnlyError(
      p,
      "gateway.yaml",
      6,
      32,
      /max_tokens_field` must be one of `max_tokens`, `max_completion_tokens`, got `max_output_tokens`/,
    );
  });

  it("still says a workers-ai entry uses the AI binding when it sets base_url", () => {
    const p = compileFiles({
      "gateway.yaml": gateway(
        `  - name: p\n    type: workers-ai\n    config: {base_url: "https://x.example"}`,
      ),
      [T]: STEP,
    });
    expectOnlyError(
      p,
      "gateway.yaml",
      6,
      14,
      /^provider `p`: workers-ai uses the Worker's AI binding; `base_url` does not apply$/,
    );
  });
});
