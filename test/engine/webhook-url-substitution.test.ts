/**
 * docs/file-format.md "Substitution": in a webhook `url`, a value inserted after the first
 * `?` is percent-encoded. The first `?` can come from an inserted value too (a base URL held in
 * env or params that carries its own query, as Google Chat or Slack hook URLs do).
 */
import { describe, expect, it } from "vitest";
import { compileTemplate } from "../../src/compiler/templates.ts";
import { render, renderUrl } from "../../src/engine/substitute.ts";
import type { EvalScope } from "../../src/engine/types.ts";

const scope = (params: Record<string, string>): EvalScope =>
  ({ params, env: {}, step: {} }) as unknown as EvalScope;

function urlTemplate(text: string) {
  return compileTemplate(text, [], { encodeAfterQuery: true, expr: (e: string) => e, malformed: () => {} });
}

describe("webhook url substitution", () => {
  it("encodes values after a `?` that an earlier inserted value brought", () => {
    const t = urlTemplate("{{ params.base }}&thread={{ params.thread }}");
    const s = scope({ base: "https://chat.example/v1/messages?key=k1", thread: "a&b=c d" });
    expect(renderUrl(t, s)).toBe("https://chat.example/v1/messages?key=k1&thread=a%26b%3Dc%20d");
  });

  it("inserts values before the first `?` as they are", () => {
    const t = urlTemplate("{{ params.base }}/{{ params.path }}?q={{ params.q }}");
    const s = scope({ base: "https://x.example", path: "a/b", q: "1&2" });
    expect(renderUrl(t, s)).toBe("https://x.example/a/b?q=1%262");
  });

  it("inserts the value that brings the `?` as it is", () => {
    const t = urlTemplate("https://x.example/a{{ params.query }}&n={{ params.n }}");
    expect(renderUrl(t, scope({ query: "?a=1&b=2", n: "x y" }))).toBe("https://x.example/a?a=1&b=2&n=x%20y");
  });

  it("leaves text that is not a URL alone (a body string with a `?`)", () => {
    const t = compileTemplate("why? {{ params.q }}", [], { expr: (e: string) => e, malformed: () => {} });
    expect(render(t, scope({ q: "a&b" }))).toBe("why? a&b");
  });
});
