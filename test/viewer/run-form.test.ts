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
    expect(html).toMatch(/<input id="rf-customer" name="customer" data-kind="string" required type="text"/);
    expect(html).toContain('<small class="help">Who &lt;ordered&gt;</small>');
    expect(html).toMatch(/name="qty" data-kind="integer" type="number" step="1"/);
    expect(html).toMatch(/name="price" data-kind="number" type="number" step="any"/);
    expect(html).toMatch(
      /<select id="rf-express" name="express" data-kind="boolean"><option value="">\(not set\)<\/option><option value="true">true<\/option><option value="false">false<\/option><\/select>/,
    );
    expect(html).toContain('<option value="&quot;M&quot;">M</option>');
    expect(html).toMatch(/<textarea id="rf-meta" name="meta" data-kind="json"/);
    expect(html).toContain('<b title="required">*</b>');
    expect(html).toContain('<button type="submit">Run orders</button>');
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
