/**
 * The built-in agents of the `core` namespace (src/agents/builtins.ts) as docs/agents-and-tools.md
 * promises them: `core/chat@1.0.0` (prompt, optional system → {text}), `core/extract@1.0.0`
 * (text, schema → an object valid against schema) and `core/classify@1.0.0` (text, labels →
 * {label}); the params each requires are the ones a step must give.
 */
import { describe, expect, it } from "vitest";
import { BUILTIN_AGENTS } from "../../src/agents/builtins.ts";
import { validateJson } from "../../src/engine/schema.ts";

const byName = (name: string) => {
  const a = BUILTIN_AGENTS.find((x) => x.name === name);
  if (!a) throw new Error(`no built-in ${name}`);
  return a;
};

describe("built-in agents", () => {
  it("are chat, extract and classify, each at 1.0.0", () => {
    expect(BUILTIN_AGENTS.map((a) => `core/${a.name}@${a.version}`)).toEqual([
      "core/chat@1.0.0",
      "core/extract@1.0.0",
      "core/classify@1.0.0",
    ]);
  });

  it("require the params their documentation names, and accept a step that gives them", () => {
    expect(validateJson(byName("chat").paramsSchema, { prompt: "hi" })).toEqual([]);
    expect(validateJson(byName("chat").paramsSchema, { system: "be brief" })).not.toEqual([]);
    expect(validateJson(byName("extract").paramsSchema, { text: "t", schema: { type: "object" } })).toEqual(
      [],
    );
    expect(validateJson(byName("extract").paramsSchema, { text: "t" })).not.toEqual([]);
    expect(validateJson(byName("classify").paramsSchema, { text: "t", labels: ["a", "b"] })).toEqual([]);
    expect(validateJson(byName("classify").paramsSchema, { text: "t", labels: [] })).not.toEqual([]);
  });

  it("promise the output shapes the compiler checks step.X.FIELD against: {text}, {label}, and none for extract", () => {
    expect(validateJson(byName("chat").outputSchema ?? true, { text: "hello" })).toEqual([]);
    expect(validateJson(byName("classify").outputSchema ?? true, { label: "a" })).toEqual([]);
    expect(validateJson(byName("classify").outputSchema ?? true, {})).not.toEqual([]);
    expect(byName("extract").outputSchema).toBeNull();
  });
});
