/**
 * substitution into a webhook URL's query (docs/file-format.md: a value inserted after the
 * first `?` is percent-encoded): a value that is not Unicode text (a lone surrogate, legal in a
 * JSON string) is encoded like the URL parser encodes it in the path, never a thrown URIError.
 */
import { describe, expect, it } from "vitest";
import type { Template } from "../../src/bundle.ts";
import { render } from "../../src/engine/substitute.ts";
import type { EvalScope } from "../../src/engine/types.ts";

describe("render into a URL query", () => {
  const t: Template = {
    t: "concat",
    parts: ["https://x.example/a?q=", { e: "params.q", encode: true }],
  };
  const scope = (q: string): EvalScope => ({ params: { q }, env: {}, step: {} }) as unknown as EvalScope;

  it("encodes a lone surrogate as U+FFFD (as `new URL` does in a path)", () => {
    expect(render(t, scope("a\ud800b"))).toBe("https://x.example/a?q=a%EF%BF%BDb");
    expect(render(t, scope("\udc00"))).toBe("https://x.example/a?q=%EF%BF%BD");
  });

  it("keeps surrogate pairs (emoji) as they are", () => {
    expect(render(t, scope("😀"))).toBe(`https://x.example/a?q=${encodeURIComponent("😀")}`);
  });
});
