/**
 * The Run form's HTML (src/viewer/run-form.ts): a field per property of params.schema, named as the
 * property, of the kind its type asks for, required ones marked, help from `description`; the
 * whole body as JSON text when the schema has no properties; no form for a signature scheme.
 */
import { describe, expect, it } from "vitest";
import type { SignatureAuth } from "../../src/bundle.ts";
import { runFormHtml } from "../../src/viewer/run-form.ts";
import { testWorkflow } from "../support/compiled.ts";

describe("the Run form", () => {
  it("has a field per property, of its kind, named as the property", () => {
    const html = runFormHtml(
      testWorkflow({
        name: "orders",
        paramsSchema: {
          type: "object",
          required: ["customer"],
          properties: {
            customer: { type: "string", description: "Who <ordered>" },
            qty: { type: "integer" },
            price: { type: "number" },
            express: { type: "boolean" },
            size: { enum: ["S", "M"] },
            meta: { type: "object" },
          },
        },
      }),
    );
    expect(html).toContain('<form class="run-form" data-workflow="orders" novalidate>');
    expect(html).toMatch(
      /<input id="rf-orders-customer" name="customer" data-kind="string" required type="text"/,
    );
    expect(html).toContain('<small class="help">Who &lt;ordered&gt;</small>');
    expect(html).toMatch(/name="qty" data-kind="integer" type="number" step="1"/);
    expect(html).toMatch(/name="price" data-kind="number" type="number" step="any"/);
    expect(html).toMatch(
      /<select id="rf-orders-express" name="express" data-kind="boolean"><option value="">\(not set\)<\/option><option value="true">true<\/option><option value="false">false<\/option><\/select>/,
    );
    expect(html).toContain('<option value="&quot;M&quot;">M</option>');
    expect(html).toMatch(/<textarea id="rf-orders-meta" name="meta" data-kind="json"/);
    expect(html).toContain('<b title="required">*</b>');
    expect(html).toContain('<button type="submit">Run orders</button>');
  });

  it("gives every field an id no other form on the page has, whatever the names", () => {
    const schema = {
      type: "object",
      properties: { customer: { type: "string" }, "a-b": { type: "string" } },
    };
    const page = [
      runFormHtml(testWorkflow({ name: "orders", paramsSchema: schema })),
      runFormHtml(testWorkflow({ name: "refunds", paramsSchema: schema })),
      runFormHtml(
        testWorkflow({ name: "orders-a", paramsSchema: { type: "object", properties: { b: {} } } }),
      ),
    ].join("");
    const ids = [...page.matchAll(/ id="([^"]+)"/g)].map((m) => m[1]);
    expect(ids).toHaveLength(5);
    expect(new Set(ids).size).toBe(5);
    for (const id of ids) expect(id).toMatch(/^[A-Za-z0-9_-]+$/);
  });

  it("carries the schema's bounds, lengths and pattern as the input's own constraints", () => {
    const html = runFormHtml(
      testWorkflow({
        name: "orders",
        paramsSchema: {
          type: "object",
          properties: {
            qty: { type: "integer", minimum: 1, maximum: 99 },
            code: { type: "string", minLength: 3, maxLength: 8, pattern: "^[A-Z]+\\d?$" },
          },
        },
      }),
    );
    expect(html).toMatch(/name="qty" data-kind="integer" min="1" max="99" type="number"/);
    expect(html).toContain(
      'name="code" data-kind="string" minlength="3" maxlength="8" pattern=".*(?:^[A-Z]+\\d?$).*"',
    );
  });

  it("asks for the whole body as JSON when the schema has no properties", () => {
    const html = runFormHtml(testWorkflow({ paramsSchema: { type: "object" } }));
    expect(html).toContain('<textarea name="body" data-kind="body"');
  });

  it("offers no form for a workflow whose senders sign", () => {
    const auth = { scheme: "stripe" } as SignatureAuth;
    const html = runFormHtml(testWorkflow({ auth }));
    expect(html).not.toContain("<form");
    expect(html).toContain("stripe");
  });
});
