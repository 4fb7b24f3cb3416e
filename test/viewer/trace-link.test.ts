/**
 * The run page's trace link (src/viewer/run-page.ts; docs/operations.md, "Traces"): the `TRACE_URL`
 * var is used only when it is an http(s) URL with `{trace_id}` in it, and it reaches the page
 * escaped, as an attribute.
 */
import { describe, expect, it } from "vitest";
import { runPage, traceUrlTemplate } from "../../src/viewer/run-page.ts";

describe("TRACE_URL", () => {
  it("is taken when it is an http(s) URL holding {trace_id}", () => {
    expect(traceUrlTemplate({ TRACE_URL: "https://ui.honeycomb.io/t/trace?trace_id={trace_id}" })).toBe(
      "https://ui.honeycomb.io/t/trace?trace_id={trace_id}",
    );
    expect(traceUrlTemplate({ TRACE_URL: "http://127.0.0.1:3000/explore/{trace_id}" })).not.toBeNull();
  });

  it("is ignored without {trace_id}, for another scheme, or unset", () => {
    expect(traceUrlTemplate({})).toBeNull();
    expect(traceUrlTemplate({ TRACE_URL: "https://ui.example.com/trace" })).toBeNull();
    expect(traceUrlTemplate({ TRACE_URL: "javascript:alert(1)//{trace_id}" })).toBeNull();
  });

  it("reaches the page as an escaped attribute", async () => {
    const html = await runPage('https://x.example.com/{trace_id}?a=1&b="2"').text();
    expect(html).toContain('data-trace-url="https://x.example.com/{trace_id}?a=1&amp;b=&quot;2&quot;"');
    expect(await runPage(null).text()).toContain('data-trace-url=""');
  });
});
