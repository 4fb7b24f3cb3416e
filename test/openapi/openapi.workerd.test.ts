/**
 * GET /openapi.json as the Worker serves it, checked against what the Worker really returns:
 * envelopes and problems of real runs validate against the document's own schemas.
 */
import { describe, expect, it } from "vitest";
import type { Json, JsonObject } from "../../src/bundle.ts";
import { validateJson } from "../../src/engine/schema.ts";
import { call, invoke, run } from "../worker/harness.ts";

// biome-ignore lint/suspicious/noExplicitAny: the document is inspected field by field
type Doc = any;

async function openApi(): Promise<Doc> {
  const res = await call("/openapi.json");
  expect(res.status).toBe(200);
  return res.json();
}

/** A standalone JSON Schema for one component: component refs become $defs refs. */
function componentSchema(doc: Doc, name: string): JsonObject {
  const text = JSON.stringify(doc.components.schemas).replaceAll('"#/components/schemas/', '"#/$defs/');
  return { $defs: JSON.parse(text), $ref: `#/$defs/${name}` };
}

describe("GET /openapi.json", () => {
  it("serves an OpenAPI 3.1 document as JSON", async () => {
    const res = await call("/openapi.json");
    expect(res.headers.get("content-type")).toBe("application/json; charset=utf-8");
    const doc = (await res.json()) as Doc;
    expect(doc.openapi).toBe("3.1.0");
  });

  it("has an invoke operation for each deployed workflow", async () => {
    const doc = await openApi();
    for (const name of ["basic", "parent", "auth-bearer", "parallel-webhooks"]) {
      expect(doc.paths[`/invoke/${name}`].post.operationId).toMatch(/^invoke[A-Z]/);
    }
  });

  it("describes real envelopes: finished, failed and with nested child steps", async () => {
    const schema = componentSchema(await openApi(), "Envelope");
    const envelopes = [
      await run("basic", { items: [{ name: "a", price: 1 }] }),
      await run("fail-fast"),
      await run("parent", { message: "hi" }),
    ];
    expect(envelopes.map((e) => e.status)).toEqual(["complete", "failed", "complete"]);
    for (const e of envelopes) expect(validateJson(schema, e as Json)).toEqual([]);
  });

  it("describes a running run's envelope", async () => {
    const schema = componentSchema(await openApi(), "Envelope");
    const accepted = (await (await invoke("parallel-webhooks")).json()) as { run_id: string };
    const e = (await (await call(`/runs/${accepted.run_id}`)).json()) as Json;
    expect(validateJson(schema, e)).toEqual([]);
  });

  it("describes the problem+json of a rejected invoke", async () => {
    const schema = componentSchema(await openApi(), "Problem");
    const res = await invoke("basic", { items: "not an array" });
    expect(res.status).toBe(422);
    expect(validateJson(schema, (await res.json()) as Json)).toEqual([]);
  });

  it("rejects what the Worker rejects: an envelope missing a key fails the schema", async () => {
    const schema = componentSchema(await openApi(), "Envelope");
    const e = (await run("basic", { items: [] })) as JsonObject;
    delete e.totals;
    expect(validateJson(schema, e)).not.toEqual([]);
  });
});
